# seam_decoder_sim matrix: every cell of tp {2,4} x attn_dp {1,2} x pp {1,2} x policy {ar, rs, rsv,
# rs+rsv} x pattern {A/F, A/E, M/M/F}, then the extra modes; the cases marked DEVICE also run on
# device tensors (label gpu) (bf16, padding, fusion, dense DP,
# input-scattered and CP batches, EP, UCX, captures, two-batch overlap, pipeline cuts). Each run
# must exit 0, PASS against the single-process reference, and print the plan line naming the
# collective the §2.6 table predicts (EXPECT, a regex over the whole output).
set(SEAM_SIM_CASE_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_sim_case.cmake)
# How every case starts the simulator (before `-n NP`).
set(SEAM_SIM_MPIRUN ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none)
# DEVICE also registers the case on device tensors (sim_cuda_<name>, label gpu: --device cuda,
# each rank on GPU local_rank % count), skipped where there is no GPU.
function(seam_add_sim_test name)
  cmake_parse_arguments(S "DEVICE" "NP;EXPECT" "ARGS;ENV" ${ARGN})
  # Through the wrapper, not PASS_REGULAR_EXPRESSION (which makes CTest ignore the exit status).
  add_test(NAME sim_${name}
    COMMAND ${CMAKE_COMMAND} -DSIM_EXPECT=${S_EXPECT} -P ${SEAM_SIM_CASE_SCRIPT} --
            ${SEAM_SIM_MPIRUN} -n ${S_NP} $<TARGET_FILE:seam_decoder_sim> --hidden 32 ${S_ARGS})
  set_tests_properties(sim_${name} PROPERTIES TIMEOUT 120 LABELS mpi ENVIRONMENT "${S_ENV}")
  if(S_DEVICE AND TARGET seam_cuda)
    add_test(NAME sim_cuda_${name}
      COMMAND ${CMAKE_COMMAND} -DSIM_EXPECT=${S_EXPECT} -P ${SEAM_SIM_CASE_SCRIPT} --
              ${SEAM_SIM_MPIRUN} -n ${S_NP} $<TARGET_FILE:seam_decoder_sim> --hidden 32 --device cuda ${S_ARGS})
    set_tests_properties(sim_cuda_${name} PROPERTIES TIMEOUT 180 LABELS gpu ENVIRONMENT "${S_ENV}"
                         SKIP_REGULAR_EXPRESSION "skipped: --device cuda")
  endif()
endfunction()

# §2.6: the collective a non-terminal FFN exit before an attention chooses on an ORDINARY batch
# under the default MAX_LEN padding. Without attention DP its sum is left to the next input (#7);
# under attention DP, RSv where the policy allows it and attention TP is 1 (#9), else RS where
# the policy allows it (#10), else the all-reduce + DP scatter fallback (#11).
function(seam_sim_ffn_exit_line out pattern attn_dp attn_tp policy)
  set(group TP)
  if(pattern STREQUAL "AE")
    set(group MOE_OUTPUT)
  endif()
  if(attn_dp EQUAL 1)
    set(sum "${group} all_reduce")
  elseif(attn_tp EQUAL 1 AND policy MATCHES "rsv$")
    set(sum "${group} reduce_scatterv")
  elseif(policy MATCHES "^rs(\\+rsv)?$")
    set(sum "MAX_LEN: ${group} reduce_scatter")
  else()
    set(sum "${group} all_reduce \\+ DP scatter")
  endif()
  set(${out} "ffn->attn \\[ORDINARY\\]: ${sum} at next input \\(deferred\\)" PARENT_SCOPE)
endfunction()

# The product. Under attention DP one replica is idle (5,0). A pipeline of 2 runs 3 layers so each
# partition keeps an FFN -> attention boundary inside it. Every combination is expressible
# (attn_tp = tp / attn_dp >= 1), so none is skipped.
foreach(tp 2 4)
  foreach(attn_dp 1 2)
    math(EXPR attn_tp "${tp} / ${attn_dp}")
    set(tokens 7)
    if(attn_dp EQUAL 2)
      set(tokens 5,0)
    endif()
    foreach(pp 1 2)
      math(EXPR np "${tp} * ${pp}")
      math(EXPR layers "${pp} + 1")
      foreach(policy ar rs rsv rs+rsv)
        foreach(pattern AF AE MMF)
          seam_sim_ffn_exit_line(expect ${pattern} ${attn_dp} ${attn_tp} ${policy})
          # On device: every topology with two policies (the all-reduce and the RS/RSv paths).
          set(device)
          if(policy STREQUAL "ar" OR policy STREQUAL "rs+rsv")
            set(device DEVICE)
          endif()
          seam_add_sim_test(tp${tp}_dp${attn_dp}_pp${pp}_${policy}_${pattern} NP ${np} ${device}
            ARGS --tp ${tp} --attn-dp ${attn_dp} --pp ${pp} --policy ${policy} --pattern ${pattern}
                 --layers ${layers} --tokens ${tokens}
            EXPECT "${expect}")
        endforeach()
      endforeach()
    endforeach()
  endforeach()
endforeach()

# No attention DP: a mixer before a mixer defers its sum (#18), before an FFN leaves it declared
# (#19); the attention's attention-TP sum completes at the FFN input (#1).
seam_add_sim_test(tp2_rs_AE_bf16 NP 2 DEVICE ARGS --tp 2 --policy rs --pattern AE --layers 2 --tokens 7 --dtype bf16
  EXPECT "ffn->attn \\[ORDINARY\\]: MOE_OUTPUT all_reduce at next input \\(deferred\\)")
seam_add_sim_test(tp2_ar_MMF NP 2 ARGS --tp 2 --policy ar --pattern MMF --layers 2 --tokens 3
  EXPECT "attn->attn \\[ORDINARY\\]: ATTN_TP all_reduce at next input \\(deferred\\).*attn->ffn \\[ORDINARY\\]: ATTN_TP partial sum left to next input \\(declared\\)")
seam_add_sim_test(tp4_ar_AF_bf16 NP 4 DEVICE ARGS --tp 4 --policy ar --pattern AF --layers 2 --tokens 6 --dtype bf16
  EXPECT "attn->ffn \\[ORDINARY\\] input: ATTN_TP all_reduce")

# Attention DP with attention TP 1 (tp = attn_dp): replicate DP gather (#3); RS under explicit
# MAX_LEN padding (#10) and the fallback (#11) beside uneven and idle replicas.
seam_add_sim_test(tp2_dp2_rs_AE_max NP 2 DEVICE ARGS --tp 2 --attn-dp 2 --policy rs --pattern AE --layers 2 --tokens 3,6 --padding max
  EXPECT "ffn->attn \\[ORDINARY\\]: MAX_LEN: MOE_OUTPUT reduce_scatter at next input \\(deferred\\)")
seam_add_sim_test(tp2_dp2_ar_AF_bf16 NP 2 ARGS --tp 2 --attn-dp 2 --policy ar --pattern AF --layers 2 --tokens 0,6 --dtype bf16
  EXPECT "ffn->attn \\[ORDINARY\\]: TP all_reduce \\+ DP scatter at next input \\(deferred\\)")
seam_add_sim_test(tp2_dp2_rs+rsv_MMF NP 2 ARGS --tp 2 --attn-dp 2 --policy rs+rsv --pattern MMF --layers 2 --tokens 2,5
  EXPECT "attn->ffn \\[ORDINARY\\] input: update\\+read, DP gather \\(replicate\\).*TP reduce_scatterv")

# Attention DP x attention TP (tp 4, attn_dp 2, attn_tp 2): DP partial gather completing the
# attention-TP sum (#2); RS over a 1/tp chunk + attention-TP all-gather (#10); RSv is not eligible
# (attention TP > 1) and falls back (#11).
seam_add_sim_test(tp4_dp2_rs+rsv_AF_max NP 4 DEVICE ARGS --tp 4 --attn-dp 2 --policy rs+rsv --pattern AF --layers 2 --tokens 5,0 --padding max
  EXPECT "DP gather \\(partial, completes ATTN_TP\\).*ffn->attn \\[ORDINARY\\]: MAX_LEN: TP reduce_scatter at next input \\(deferred\\)")
seam_add_sim_test(tp4_dp2_rsv_AE_sum NP 4 DEVICE ARGS --tp 4 --attn-dp 2 --policy rsv --pattern AE --layers 2 --tokens 3,7 --padding sum
  EXPECT "ffn->attn \\[ORDINARY\\]: MOE_OUTPUT all_reduce \\+ DP scatter at next input \\(deferred\\)")
# GQA prefill CP (§2.6 row 16, §3.3) with uneven shards: each CP rank holds --cp-shards rows of its
# replica; the FFN's input gather pads every shard to the longest (ATTN_CP all_gather of 2 x 5 rows
# at 5,3), takes its own rows back at the exit; under DP x CP the DP gather places the shards.
seam_add_sim_test(tp2_cp2_gqa_ar_AE_uneven NP 2 DEVICE ARGS --tp 2 --attn-cp 2 --gqa-cp --cp-shards 5,3 --policy ar --pattern AE --layers 2 --tokens 7
  EXPECT "input CP gather\n *ffn->norm \\[CONTEXT_PARALLEL\\]: MOE_OUTPUT all_reduce in compute, CP take-back at exit.*ATTN_CP +all_gather +2 calls +2560 bytes")
seam_add_sim_test(tp4_cp2_gqa_rs+rsv_AF_uneven_bf16 NP 4 ARGS --tp 4 --attn-cp 2 --gqa-cp --cp-shards 6,2 --policy rs+rsv --pattern AF --layers 2 --tokens 7 --dtype bf16
  EXPECT "CP take-back at exit")
seam_add_sim_test(tp4_dp2_cp2_gqa_ar_AE_uneven NP 4 DEVICE ARGS --tp 4 --attn-dp 2 --attn-cp 2 --gqa-cp --cp-shards 3,1 --policy ar --pattern AE --layers 2 --tokens 4,3
  EXPECT "DP gather \\(replicate, places CP shards\\)\n *ffn->norm \\[CONTEXT_PARALLEL\\]: MOE_OUTPUT all_reduce in compute, DP\\+CP take-back at exit")
seam_add_sim_test(tp2_pp2_cp2_gqa_ar_MMF_uneven NP 4 ARGS --tp 2 --pp 2 --attn-cp 2 --gqa-cp --cp-shards 1,5 --policy ar --pattern MMF --layers 2 --tokens 6
  EXPECT "CP take-back at exit")

# SGLANG_DP_USE_GATHERV (§3.1): attn_tp 1, tp = attn_dp, SUM_LEN: the DP gather is one TP
# all_gatherv of each replica's exact rows, and RSv returns them (one idle replica).
seam_add_sim_test(tp2_dp2_rsv_AF_sum_gatherv NP 2 DEVICE ARGS --tp 2 --attn-dp 2 --policy rsv --pattern AF --layers 2 --tokens 3,0 --padding sum
  --dp-gatherv EXPECT "TP +reduce_scatterv .*TP +all_gatherv")
seam_add_sim_test(tp4_dp4_rsv_AE_sum_gatherv_bf16 NP 4 ARGS --tp 4 --attn-dp 4 --policy rsv --pattern AE --layers 2 --tokens 3,1,6,2 --padding sum
  --dp-gatherv --dtype bf16 EXPECT "MOE_OUTPUT reduce_scatterv at exit.*TP +reduce_scatterv .*TP +all_gatherv")
seam_add_sim_test(tp4_dp2_ar_MMF_bf16 NP 4 ARGS --tp 4 --attn-dp 2 --policy ar --pattern MMF --tokens 2,5 --dtype bf16
  EXPECT "attn->attn \\[ORDINARY\\]: ATTN_TP all_reduce in compute.*DP gather \\(partial, completes ATTN_TP\\)")

# Pipeline parallel: to_pp / from_pp carry hidden states and residual (a declared partial crosses raw).
# A sum the sender completed (an input-scattered embedding's before a mixer that reads full rows;
# a partition ending in an FFN under two-batch overlap) is not declared again by the receiver.
seam_add_sim_test(tp2_pp2_ar_MMF_input_scattered_completed NP 4 DEVICE ARGS --tp 2 --pp 2 --input-scattered --policy ar --pattern MMF --layers 2 --tokens 5
  EXPECT "embed->attn \\[INPUT_SCATTERED\\] input: enter, TP all_reduce")
seam_add_sim_test(tp2_pp2_AF_tbo_cut NP 4 ARGS --tp 2 --pp 2 --pattern AF --layers 3 --tokens 7 --microbatches 2
  EXPECT "# pipeline stage 1[^#]*L3 F +attn->ffn \\[ORDINARY\\] input: ATTN_TP all_reduce")
seam_add_sim_test(tp2_pp2_rs+rsv_MMF_bf16 NP 4 ARGS --tp 2 --pp 2 --policy rs+rsv --pattern MMF --layers 2 --tokens 4 --dtype bf16
  EXPECT "# pipeline stage 1.*attn->attn \\[ORDINARY\\]: ATTN_TP all_reduce at next input \\(deferred\\)")
# A cut right after an attention: its declared attention-TP partial crosses raw, and the receiving
# FFN's input completes it (plain, or inside the DP partial gather).
seam_add_sim_test(tp2_pp2_ar_AF_cut_partial NP 4 ARGS --tp 2 --pp 2 --policy ar --pattern AF --layers 3 --tokens 5
  EXPECT "# pipeline stage 1[^#]*L3 F +attn->ffn \\[ORDINARY\\] input: ATTN_TP all_reduce")
seam_add_sim_test(tp4_dp2_pp2_rs+rsv_AF_cut_partial_bf16 NP 8 DEVICE ARGS --tp 4 --attn-dp 2 --pp 2 --policy rs+rsv --pattern AF --layers 3 --tokens 3,6 --dtype bf16
  EXPECT "# pipeline stage 1[^#]*L3 F +attn->ffn \\[ORDINARY\\] input: DP gather \\(partial, completes ATTN_TP\\)")
seam_add_sim_test(tp2_dp2_pp2_rsv_AE_idle NP 4 ARGS --tp 2 --attn-dp 2 --pp 2 --policy rsv --pattern AE --layers 2 --tokens 4,0
  EXPECT "MOE_OUTPUT reduce_scatterv at next input \\(deferred\\).*# pipeline stage 1")
seam_add_sim_test(tp4_dp2_pp2_rs_AF_max NP 8 ARGS --tp 4 --attn-dp 2 --pp 2 --policy rs --pattern AF --layers 2 --tokens 6,1 --padding max
  EXPECT "DP gather \\(partial, completes ATTN_TP\\).*# pipeline stage 1.*TP reduce_scatter at exit")

# SUM_LEN DP partial gather (zero-fill + copy at offset + TP all-reduce) beside an idle replica.
seam_add_sim_test(tp4_dp2_ar_AE_sum_idle NP 4 DEVICE ARGS --tp 4 --attn-dp 2 --policy ar --pattern AE --layers 2 --tokens 0,5 --padding sum
  EXPECT "DP gather \\(partial, completes ATTN_TP\\).*# collectives executed.*TP +all_reduce")
# Seam's host fused all-reduce + add + RMSNorm completes the FFN input's attention-TP sum (an
# all-gather of the partials) and the attention input's carried TP sum; without it, all-reduces.
seam_add_sim_test(tp2_ar_AF_fused NP 2 ARGS --tp 2 --policy ar --pattern AF --layers 2 --tokens 5
  EXPECT "ATTN_TP +all_gather +2 calls.*TP +all_gather +1 calls")
# On device, Seam's fused all-reduce + add + RMSNorm (one DeviceCommunicator call) does both.
if(TARGET seam_cuda)
  add_test(NAME sim_cuda_tp2_ar_AF_fused
    COMMAND ${CMAKE_COMMAND} "-DSIM_EXPECT=ATTN_TP +fused_all_reduce_norm +2 calls.*TP +fused_all_reduce_norm +1 calls"
            -P ${SEAM_SIM_CASE_SCRIPT} -- ${SEAM_SIM_MPIRUN} -n 2 $<TARGET_FILE:seam_decoder_sim> --hidden 32
            --device cuda --tp 2 --policy ar --pattern AF --layers 2 --tokens 5)
  set_tests_properties(sim_cuda_tp2_ar_AF_fused PROPERTIES TIMEOUT 180 LABELS gpu
                       SKIP_REGULAR_EXPRESSION "skipped: --device cuda")
endif()
# Device boundaries across two hosts (told apart by SEAM_HOSTNAME, UCX over TCP on the loopback,
# as the GPU machine has one host): the pipeline cut between the hosts, and attention DP with the
# TP groups spanning both (their device collectives staged, all-reduces in two levels).
if(TARGET seam_cuda)
  set(sim_two_hosts --env 0:SEAM_HOSTNAME=host-a --env 1:SEAM_HOSTNAME=host-a --env 2:SEAM_HOSTNAME=host-b
                    --env 3:SEAM_HOSTNAME=host-b --env UCX_TLS=tcp,self --env UCX_NET_DEVICES=lo)
  foreach(c "tp2_pp2_ar_AF|# pipeline stage 1|--tp;2;--pp;2;--policy;ar;--pattern;AF;--tokens;5"
          "tp4_dp2_rs+rsv_AE|DP gather|--tp;4;--attn-dp;2;--policy;rs+rsv;--pattern;AE;--tokens;5,3")
    string(REPLACE "|" ";" args "${c}")
    list(POP_FRONT args name expect)
    add_test(NAME sim_cuda_two_hosts_${name}
      COMMAND ${CMAKE_COMMAND} "-DSIM_EXPECT=${expect}" -P ${SEAM_SIM_CASE_SCRIPT} --
              $<TARGET_FILE:seam_local_launcher> -n 4 ${sim_two_hosts} --timeout-s 170 --
              $<TARGET_FILE:seam_decoder_sim> --hidden 32 --device cuda --layers 2 ${args})
    set_tests_properties(sim_cuda_two_hosts_${name} PROPERTIES TIMEOUT 180 LABELS gpu
                         SKIP_REGULAR_EXPRESSION "skipped: --device cuda")
  endforeach()
endif()
seam_add_sim_test(tp2_ar_AF_unfused NP 2 DEVICE ARGS --tp 2 --policy ar --pattern AF --layers 2 --tokens 5 --no-fusion
  EXPECT "ATTN_TP +all_reduce +2 calls.*TP +all_reduce +2 calls")
# `auto` resolves like a dummy checkpoint (rs+rsv): RSv where eligible.
seam_add_sim_test(tp2_dp2_auto_AE_bf16 NP 2 ARGS --tp 2 --attn-dp 2 --policy auto --pattern AE --layers 2 --tokens 1,6 --dtype bf16
  EXPECT "policy rs\\+rsv.*MOE_OUTPUT reduce_scatterv at next input \\(deferred\\)")

# Dense FFNs fully data-parallel (--dense-tp 1): the FFN input completes the attention-TP sum with a
# reduce-scatter onto this rank's slice (#4), the residual stays on slices, the next attention
# gathers its read input back over attention TP and the last FFN writes and gathers at its exit
# (#14); an FFN whose rows cross a pipeline cut gathers back at its exit too (§3.5).
seam_add_sim_test(tp2_ar_AF_dense_dp NP 2 DEVICE ARGS --tp 2 --dense-tp 1 --policy ar --pattern AF --layers 2 --tokens 5
  EXPECT "ATTN_TP reduce_scatter onto slice, residual attention-TP slice.*input attention-TP gather.*attention-TP gather at exit")
seam_add_sim_test(tp2_pp2_ar_AF_dense_dp_bf16 NP 4 ARGS --tp 2 --pp 2 --dense-tp 1 --policy ar --pattern AF --layers 3 --tokens 3 --dtype bf16
  EXPECT "# pipeline stage 1[^#]*L3 F +attn->ffn \\[ORDINARY\\] input: ATTN_TP reduce_scatter onto slice")
seam_add_sim_test(tp4_dp2_pp2_rs_AF_dense_dp_idle NP 8 ARGS --tp 4 --attn-dp 2 --pp 2 --dense-tp 1 --policy rs --pattern AF --layers 3 --tokens 0,7
  EXPECT "ATTN_TP reduce_scatter onto slice")

# INPUT_SCATTERED batches (--input-scattered): the vocab-parallel embedding's TP partial completes
# with a TP reduce-scatter onto slices (#6), attention gathers its sliced input itself, the residual
# slice joins the attention partial before the all-reduce (#5), and an FFN with RS permission leaves
# its TP sum to the next attention's reduce-scatter (#13).
seam_add_sim_test(tp2_rs_AF_input_scattered NP 2 DEVICE ARGS --tp 2 --input-scattered --policy rs --pattern AF --layers 2 --tokens 5
  EXPECT "embed->attn \\[INPUT_SCATTERED\\] input: TP reduce_scatter onto slice.*attn->ffn \\[INPUT_SCATTERED\\] input: residual joins partial.*ffn->attn \\[INPUT_SCATTERED\\]: TP sum left to next input's reduce_scatter \\(declared\\)")
seam_add_sim_test(tp4_rs+rsv_AF_input_scattered_bf16 NP 4 ARGS --tp 4 --input-scattered --policy rs+rsv --pattern AF --layers 2 --tokens 7 --dtype bf16
  EXPECT "ffn->attn \\[INPUT_SCATTERED\\] input: TP reduce_scatter onto slice")
# A mixer that does not gather its own input reads full rows: the embedding's TP sum is an all-reduce.
seam_add_sim_test(tp2_pp2_rs_MMF_input_scattered NP 4 ARGS --tp 2 --pp 2 --input-scattered --policy rs --pattern MMF --layers 2 --tokens 5
  EXPECT "embed->attn \\[INPUT_SCATTERED\\] input: enter, TP all_reduce")
# Fewer tokens than TP ranks: some attention-TP slices are empty.
seam_add_sim_test(tp4_rs_AF_input_scattered_short NP 4 ARGS --tp 4 --input-scattered --policy rs --pattern AF --layers 2 --tokens 3
  EXPECT "embed->attn \\[INPUT_SCATTERED\\] input: TP reduce_scatter onto slice.*ffn->attn \\[INPUT_SCATTERED\\]: TP sum left to next input's reduce_scatter \\(declared\\)")

# Context-parallel batches (--attn-cp, DSA/MLA-style equal shards): the FFN input reads on this
# rank's CP shard, then gathers over attention CP; the FFN's exit takes its shard back (or a CP
# reduce-scatter completes the sum) (#15); a fused FFN input (the default) gathers its shards too.
seam_add_sim_test(tp4_cp2_rs_AF NP 4 DEVICE ARGS --tp 4 --attn-cp 2 --policy rs --pattern AF --layers 2 --tokens 7
  EXPECT "attn->ffn \\[CONTEXT_PARALLEL\\] input: ATTN_TP all_reduce[^\n]*input CP gather.*ffn->attn \\[CONTEXT_PARALLEL\\]: TP all_reduce in compute, CP take-back at exit")
seam_add_sim_test(tp2_cp2_rs_AE NP 2 ARGS --tp 2 --attn-cp 2 --policy rs --pattern AE --layers 2 --tokens 5
  EXPECT "ffn->attn \\[CONTEXT_PARALLEL\\]: MOE_OUTPUT sum completed by ATTN_CP reduce_scatter at exit.*ATTN_CP +reduce_scatter")
seam_add_sim_test(tp4_cp2_pp2_ar_MMF_bf16 NP 8 ARGS --tp 4 --attn-cp 2 --pp 2 --policy ar --pattern MMF --layers 2 --tokens 9 --dtype bf16
  EXPECT "# pipeline stage 1[^#]*attn->ffn \\[CONTEXT_PARALLEL\\] input: ATTN_TP all_reduce[^\n]*input CP gather")
# ... under attention DP too (#17): the FFN input's DP gather places each CP rank's equal shard in
# its replica's slot, and the exit takes the shard back; no RS, RSv or deferral, whatever the policy.
seam_add_sim_test(tp8_dp2_cp2_rsrsv_AF NP 8 DEVICE ARGS --tp 8 --attn-dp 2 --attn-cp 2 --policy rs+rsv --pattern AF --layers 2 --tokens 8,5
  EXPECT "attn->ffn \\[CONTEXT_PARALLEL\\] input: DP gather \\(partial, completes ATTN_TP, places CP shards\\).*ffn->attn \\[CONTEXT_PARALLEL\\]: TP all_reduce in compute, DP\\+CP take-back at exit")
seam_add_sim_test(tp4_dp2_cp2_rs_AE_idle NP 4 ARGS --tp 4 --attn-dp 2 --attn-cp 2 --policy rs --pattern AE --layers 2 --tokens 7,0
  EXPECT "DP gather \\(replicate, places CP shards\\).*MOE_OUTPUT all_reduce in compute, DP\\+CP take-back at exit")
seam_add_sim_test(tp4_dp2_cp2_pp2_ar_MMF_bf16 NP 8 ARGS --tp 4 --attn-dp 2 --attn-cp 2 --pp 2 --policy ar --pattern MMF --layers 2 --tokens 9,4 --dtype bf16
  EXPECT "# pipeline stage 1[^#]*DP\\+CP take-back at exit")
# Decode batches on a CP topology (--cp-decode: every CP rank holds its replica's rows whole): without
# attention DP the FFN's sum moves on as on any decode batch (#7); under attention DP the DP gather
# has only CP rank 0 write each replica's rows, and the sum comes back by all-reduce + DP scatter,
# never by a DP reduce-scatter (#17: it cannot reduce-scatter over CP ranks; rs+rsv once chose it).
seam_add_sim_test(tp4_cp2_rs_AF_decode NP 4 ARGS --tp 4 --attn-cp 2 --policy rs --pattern AF --layers 2 --tokens 7 --cp-decode
  EXPECT "ffn->attn \\[ORDINARY\\]: TP all_reduce at next input \\(deferred\\)")
seam_add_sim_test(tp8_dp2_cp2_rsrsv_AF_decode NP 8 ARGS --tp 8 --attn-dp 2 --attn-cp 2 --policy rs+rsv --pattern AF --layers 2 --tokens 8,5 --cp-decode
  EXPECT "ffn->attn \\[ORDINARY\\]: TP all_reduce in compute, DP scatter at exit")
seam_add_sim_test(tp8_dp2_cp2_rs_AE_decode_sum NP 8 ARGS --tp 8 --attn-dp 2 --attn-cp 2 --policy rs --pattern AE --layers 2 --tokens 0,5 --padding sum --cp-decode
  EXPECT "ffn->attn \\[ORDINARY\\]: MOE_OUTPUT all_reduce in compute, DP scatter at exit")

# Experts over EP x MoE-TP (--moe-ep): the merged post-experts sum is not one all-reduce, so the MoE
# completes it in compute (#8); with moe_ep == attn_dp under attention TP 2 RSv is not eligible
# (§3.1: attention TP 1 only), so the rsv policy falls back to the all-reduce + DP scatter.
seam_add_sim_test(tp4_moe_ep2_ar_AE NP 4 ARGS --tp 4 --moe-ep 2 --policy ar --pattern AE --layers 2 --tokens 5
  EXPECT "ffn->attn \\[ORDINARY\\]: MOE_OUTPUT all_reduce in compute")
seam_add_sim_test(tp4_dp2_moe_ep2_rsv_AE NP 4 DEVICE ARGS --tp 4 --attn-dp 2 --moe-ep 2 --policy rsv --pattern AE --layers 2 --tokens 5,2
  EXPECT "ffn->attn \\[ORDINARY\\]: MOE_OUTPUT all_reduce in compute, DP scatter at exit")

# The same boundaries over UCX instead of shared memory.
seam_add_sim_test(tp4_dp2_rs+rsv_AE_ucx NP 4 ENV SEAM_TRANSPORT=ucx ARGS --tp 4 --attn-dp 2 --policy rs+rsv --pattern AE --layers 2 --tokens 5,0
  EXPECT "DP gather \\(partial, completes ATTN_TP\\)")
seam_add_sim_test(tp2_pp2_ar_AF_ucx NP 4 ENV SEAM_TRANSPORT=ucx ARGS --tp 2 --pp 2 --policy ar --pattern AF --layers 3 --tokens 5
  EXPECT "# pipeline stage 1[^#]*L3 F +attn->ffn \\[ORDINARY\\] input: ATTN_TP all_reduce")

# Auxiliary capture (--capture): every attention prepare captures its updated residual, moved back
# to its producer's rows (a DP gather of the residual under attention DP, an attention-TP gather
# from slices, a CP gather on CP batches); each capture must equal the residual the reference reads.
seam_add_sim_test(tp4_dp2_rs+rsv_AF_capture NP 4 DEVICE ARGS --tp 4 --attn-dp 2 --policy rs+rsv --pattern AF --layers 2 --tokens 5,0 --capture
  EXPECT "DP gather \\(partial, completes ATTN_TP\\).*ffn->attn \\[ORDINARY\\]: MAX_LEN: TP reduce_scatter at next input")
seam_add_sim_test(tp4_ar_MMF_capture_bf16 NP 4 DEVICE ARGS --tp 4 --policy ar --pattern MMF --layers 2 --tokens 5 --capture --dtype bf16
  EXPECT "attn->attn \\[ORDINARY\\]: ATTN_TP all_reduce at next input \\(deferred\\)")
seam_add_sim_test(tp2_ar_AF_dense_dp_capture NP 2 ARGS --tp 2 --dense-tp 1 --policy ar --pattern AF --layers 2 --tokens 5 --capture
  EXPECT "attn->ffn \\[ORDINARY\\] input: ATTN_TP reduce_scatter onto slice")
seam_add_sim_test(tp4_cp2_rs_AF_capture NP 4 ARGS --tp 4 --attn-cp 2 --policy rs --pattern AF --layers 2 --tokens 7 --capture
  EXPECT "attn->ffn \\[CONTEXT_PARALLEL\\] input: ATTN_TP all_reduce[^\n]*input CP gather")
seam_add_sim_test(tp2_dp2_pp2_rsv_AE_capture NP 4 ARGS --tp 2 --attn-dp 2 --pp 2 --policy rsv --pattern AE --layers 2 --tokens 3,4 --capture
  EXPECT "ffn->attn \\[ORDINARY\\]: MOE_OUTPUT reduce_scatterv at next input \\(deferred\\)")

# Two-batch overlap (--microbatches 2): each microbatch on its own stream and its own stage runners
# (a runner's buffers serve one live stream), stages interleaved, merged before the final norm / the
# pipeline send. The split comes after a dense FFN followed by a sparse one, else at the input.
seam_add_sim_test(tp2_ar_AF_tbo NP 2 DEVICE ARGS --tp 2 --policy ar --pattern AF --layers 2 --tokens 5 --microbatches 2
  EXPECT "ffn->attn \\[ORDINARY\\]: TP all_reduce at next input \\(deferred\\)")
seam_add_sim_test(tp4_rs_AE_tbo_capture NP 4 ARGS --tp 4 --policy rs --pattern AE --layers 2 --tokens 9 --microbatches 2 --capture
  EXPECT "ffn->attn \\[ORDINARY\\]: MOE_OUTPUT all_reduce at next input \\(deferred\\)")
seam_add_sim_test(tp2_pp2_rs+rsv_MMF_tbo_bf16 NP 4 ARGS --tp 2 --pp 2 --policy rs+rsv --pattern MMF --layers 2 --tokens 7 --microbatches 2 --dtype bf16
  EXPECT "# pipeline stage 1[^#]*attn->attn \\[ORDINARY\\]: ATTN_TP all_reduce at next input \\(deferred\\)")

# ... under attention DP: each replica splits its own rows, each microbatch has its own per-replica
# token counts, so its DP gathers, RS and RSv run over its own global buffer (an idle replica's
# microbatches are idle too; MAX_LEN and SUM_LEN).
seam_add_sim_test(tp4_dp2_rs+rsv_AF_tbo NP 4 DEVICE ARGS --tp 4 --attn-dp 2 --policy rs+rsv --pattern AF --layers 2 --tokens 5,0 --microbatches 2
  EXPECT "DP gather \\(partial, completes ATTN_TP\\).*# tbo: split before L0 A: layer input \\{ATTN_DP\\} -> keep; merge after L3 F")
seam_add_sim_test(tp2_dp2_rsv_AE_tbo_sum NP 2 ARGS --tp 2 --attn-dp 2 --policy rsv --pattern AE --layers 2 --tokens 3,6 --padding sum --microbatches 2
  EXPECT "ffn->attn \\[ORDINARY\\]: MOE_OUTPUT reduce_scatterv at next input \\(deferred\\).*# tbo: split before L0 A")
seam_add_sim_test(tp4_dp2_pp2_rs_AE_tbo_capture_bf16 NP 8 ARGS --tp 4 --attn-dp 2 --pp 2 --policy rs --pattern AE --layers 2 --tokens 6,1 --microbatches 2 --capture --dtype bf16
  EXPECT "# tbo: split before L0 A[^#]*# pipeline stage 1[^#]*# tbo: split before L2 A: layer input \\{ATTN_DP\\} -> keep")
# ... with dense FFNs fully data-parallel (--dense-tp 1): inside the microbatches the FFNs run on
# attention-TP slices; with a dense FFN before a sparse one, §3.5's TBO_SPLIT makes that FFN update
# and gather back to attention rows at its exit (only because TBO is on), and the split comes right
# after it (§3.6: attention rows, kept as they are); the dense layers before it run on the whole
# batch, and a partition before the split runs whole.
seam_add_sim_test(tp2_ar_AF_dense_dp_tbo NP 2 ARGS --tp 2 --dense-tp 1 --policy ar --pattern AF --layers 2 --tokens 5 --microbatches 2
  EXPECT "ATTN_TP reduce_scatter onto slice.*# tbo: split before L0 A: layer input \\{\\} -> keep")
seam_add_sim_test(tp2_ar_AFAE_dense_dp_tbo_split NP 2 DEVICE ARGS --tp 2 --dense-tp 1 --policy ar --pattern AFAE --tokens 7 --microbatches 2
  EXPECT "L1 F [^#]*ffn->attn \\[ORDINARY\\]: complete \\(no sum\\), update into residual slice, attention-TP gather at exit[^#]*# tbo: split before L2 A \\(after L1 F's TBO_SPLIT handoff\\): layer input \\{\\} -> keep")
seam_add_sim_test(tp4_dp2_rs+rsv_AFAE_dense_dp_tbo_split NP 4 ARGS --tp 4 --attn-dp 2 --dense-tp 1 --policy rs+rsv --pattern AFAE --layers 2 --tokens 6,3 --microbatches 2
  EXPECT "# tbo: split before L2 A \\(after L1 F's TBO_SPLIT handoff\\): layer input \\{ATTN_DP\\} -> keep; merge after L7 E")
seam_add_sim_test(tp2_pp2_ar_AFAE_dense_dp_tbo_split NP 4 ARGS --tp 2 --pp 2 --dense-tp 1 --policy ar --pattern AFAE --tokens 5 --microbatches 2
  EXPECT "# tbo: whole batch \\(the split is in a later partition\\)[^#]*# pipeline stage 1[^#]*# tbo: split before L2 A")
# §3.5: an FFN handing off to another pipeline rank returns attention rows — under --dense-tp 1 it
# updates its residual slice and gathers back at its exit (§2.6 row 14), and the receiver reads the
# stream as written. Where the cut comes after the attention stages that follow it, that FFN still
# hands attention rows on (they keep the residual where it put it), so the residual crosses the cut
# on attention rows beside the attention partial and two-batch overlap splits and merges them on
# both sides.
seam_add_sim_test(tp2_pp2_ar_AF_dense_dp_pp_handoff NP 4 DEVICE ARGS --tp 2 --pp 2 --dense-tp 1 --policy ar --pattern AF --layers 2 --tokens 5
  EXPECT "L1 F [^#]*ffn->attn \\[ORDINARY\\]: complete \\(no sum\\), update into residual slice, attention-TP gather at exit[^#]*# pipeline stage 1")
seam_add_sim_test(tp4_dp2_pp2_rs_AF_dense_dp_pp_handoff NP 8 ARGS --tp 4 --attn-dp 2 --pp 2 --dense-tp 1 --policy rs --pattern AF --layers 2 --tokens 6,3
  EXPECT "L1 F [^#]*ffn->attn \\[ORDINARY\\]: complete \\(no sum\\), update into residual slice, attention-TP gather at exit[^#]*# pipeline stage 1")
seam_add_sim_test(tp2_pp2_ar_AF_dense_dp_pp_handoff_tbo NP 4 ARGS --tp 2 --pp 2 --dense-tp 1 --policy ar --pattern AF --layers 2 --tokens 5 --microbatches 2
  EXPECT "attention-TP gather at exit[^#]*# tbo: split before L0 A: layer input \\{\\} -> keep; merge after L1 F[^#]*# pipeline stage 1[^#]*# tbo: split before L2 A: layer input \\{\\} -> keep")
seam_add_sim_test(tp2_pp2_ar_AF_dense_dp_tbo_cut_after_attention NP 4 DEVICE ARGS --tp 2 --pp 2 --dense-tp 1 --policy ar --pattern AF --layers 3 --tokens 5 --microbatches 2
  EXPECT "L1 F [^#]*attention-TP gather at exit[^#]*# tbo: split before L0 A: layer input \\{\\} -> keep; merge after L2 A[^#]*# pipeline stage 1[^#]*# tbo: split before L3 F: layer input \\{\\} -> keep")
seam_add_sim_test(tp4_dp2_pp2_rs+rsv_AF_dense_dp_tbo_cut_after_attention NP 8 ARGS --tp 4 --attn-dp 2 --pp 2 --dense-tp 1 --policy rs+rsv --pattern AF --layers 3 --tokens 6,3 --microbatches 2
  EXPECT "L1 F [^#]*attention-TP gather at exit[^#]*# tbo: split before L0 A: layer input \\{ATTN_DP\\} -> keep; merge after L2 A[^#]*# pipeline stage 1[^#]*# tbo: split before L3 F: layer input \\{ATTN_DP\\} -> keep")
seam_add_sim_test(tp1_pp2_ar_AF_tbo_cut_after_attention NP 2 ARGS --tp 1 --pp 2 --policy ar --pattern AF --layers 3 --tokens 5 --microbatches 2
  EXPECT "# tbo: split before L0 A: layer input \\{\\} -> keep; merge after L2 A[^#]*# pipeline stage 1[^#]*# tbo: split before L3 F: layer input \\{\\} -> keep")
seam_add_sim_test(tp2_pp4_ar_AF_dense_dp_tbo_cuts_bf16 NP 8 ARGS --tp 2 --pp 4 --dense-tp 1 --policy ar --pattern AF --layers 3 --tokens 5 --microbatches 2 --dtype bf16
  EXPECT "# tbo: split before L1 F: layer input \\{\\} -> keep; merge after L2 A[^#]*# pipeline stage 2[^#]*# tbo: split before L3 F")
# ... on INPUT_SCATTERED batches: the split comes before the stack entry's TP sum, so each
# microbatch's first attention reduce-scatters its own rows of the vocab-parallel partial.
seam_add_sim_test(tp2_rs_AF_input_scattered_tbo NP 2 ARGS --tp 2 --input-scattered --policy rs --pattern AF --layers 2 --tokens 5 --microbatches 2
  EXPECT "embed->attn \\[INPUT_SCATTERED\\] input: TP reduce_scatter onto slice.*# tbo: split before L0 A")
seam_add_sim_test(tp4_rs+rsv_AE_input_scattered_tbo_bf16 NP 4 ARGS --tp 4 --input-scattered --policy rs+rsv --pattern AE --layers 2 --tokens 9 --microbatches 2 --dtype bf16
  EXPECT "embed->attn \\[INPUT_SCATTERED\\] input: TP reduce_scatter onto slice.*# tbo: split before L0 A")
seam_add_sim_test(tp2_pp2_ar_MMF_input_scattered_tbo NP 4 ARGS --tp 2 --pp 2 --input-scattered --policy ar --pattern MMF --layers 2 --tokens 5 --microbatches 2
  EXPECT "# pipeline stage 1[^#]*# tbo: split before L3 M: layer input \\{\\} -> keep")
# ... on context-parallel batches: each CP rank splits its own shard alike, so each microbatch is a
# CP batch of equal shards with its own CP gathers, take-backs and reduce-scatters.
seam_add_sim_test(tp4_cp2_rs_AF_tbo NP 4 DEVICE ARGS --tp 4 --attn-cp 2 --policy rs --pattern AF --layers 2 --tokens 7 --microbatches 2
  EXPECT "input CP gather.*CP take-back at exit.*# tbo: split before L0 A: layer input \\{ATTN_CP\\} -> keep")
seam_add_sim_test(tp2_cp2_rs_AE_tbo NP 2 ARGS --tp 2 --attn-cp 2 --policy rs --pattern AE --layers 2 --tokens 5 --microbatches 2
  EXPECT "MOE_OUTPUT sum completed by ATTN_CP reduce_scatter at exit.*# tbo: split before L0 A: layer input \\{ATTN_CP\\}.*ATTN_CP +reduce_scatter")
seam_add_sim_test(tp4_cp2_rs_AF_tbo_capture NP 4 ARGS --tp 4 --attn-cp 2 --policy rs --pattern AF --layers 2 --tokens 9 --microbatches 2 --capture
  EXPECT "# tbo: split before L0 A: layer input \\{ATTN_CP\\} -> keep")
seam_add_sim_test(tp4_cp2_pp2_ar_MMF_tbo_bf16 NP 8 ARGS --tp 4 --attn-cp 2 --pp 2 --policy ar --pattern MMF --layers 2 --tokens 9 --microbatches 2 --dtype bf16
  EXPECT "# pipeline stage 1[^#]*# tbo: split before L3 M: layer input \\{ATTN_CP\\} -> keep")
seam_add_sim_test(tp8_dp2_cp2_rsrsv_AE_tbo NP 8 ARGS --tp 8 --attn-dp 2 --attn-cp 2 --policy rs+rsv --pattern AE --layers 2 --tokens 8,5 --microbatches 2
  EXPECT "# tbo: split before L0 A: layer input \\{ATTN_DP,ATTN_CP\\} -> keep")
seam_add_sim_test(tp8_dp2_cp2_rs_AF_decode_tbo NP 8 ARGS --tp 8 --attn-dp 2 --attn-cp 2 --policy rs --pattern AF --layers 2 --tokens 8,5 --microbatches 2 --cp-decode
  EXPECT "ffn->attn \\[ORDINARY\\]: TP all_reduce in compute, DP scatter at exit.*# tbo: split before L0 A")
