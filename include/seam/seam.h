/* Seam's C API: communicators and collectives for engines not written in C++.
 *
 * Every function returns a seam_status_t (SEAM_OK or an error code; no C++ exception ever
 * crosses this boundary) except the small getters, which say in their line what they return on
 * a bad handle. After a failure, seam_last_error() gives this thread's message.
 *
 * Collectives are non-blocking: each stores a work handle in *work, to be completed with
 * seam_work_wait / seam_work_test and released with seam_work_free. Passing work == NULL makes
 * the call blocking (it returns once the operation completed). Every rank must issue the
 * collectives of one communicator in the same order, from one thread at a time; buffers must
 * stay valid until the work completes. In-place calls follow NCCL: all_reduce send == recv;
 * reduce_scatter(v) recv == send + this rank's block offset; all_gather(v) send == recv + this
 * rank's block offset. After SEAM_ERR_COMM or SEAM_ERR_TIMEOUT a communicator is aborted: later
 * calls on it fail at once. Configuration (timeouts, transports, logging) comes from the SEAM_*
 * environment variables, as for the C++ API. */
#ifndef SEAM_SEAM_H
#define SEAM_SEAM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Visible from libseam_c even where the engine builds with -fvisibility=hidden. */
#if defined(__GNUC__)
#define SEAM_API __attribute__((visibility("default")))
#else
#define SEAM_API
#endif

/** Outcome of a call; each C++ error category of Seam has its own code. */
typedef enum seam_status {
  SEAM_OK = 0,
  SEAM_ERR_VALUE = 1,         /**< a bad argument or option (ValueError; also NULL handles) */
  SEAM_ERR_TYPE = 2,          /**< an argument of the wrong kind (TypeError) */
  SEAM_ERR_MISMATCH = 3,      /**< arguments that disagree across ranks (MismatchError) */
  SEAM_ERR_TIMEOUT = 4,       /**< a wait passed its deadline, SEAM_TIMEOUT_MS (TimeoutError) */
  SEAM_ERR_COMM = 5,          /**< a peer died, a link broke, or a remote call failed (CommError) */
  SEAM_ERR_USAGE = 6,         /**< misuse: a call out of order or on an unusable object (UsageError) */
  SEAM_ERR_NOT_SUPPORTED = 7, /**< not supported by this build or configuration (NotSupportedError) */
  SEAM_ERR_OTHER = 8          /**< any other failure (out of memory, an internal error) */
} seam_status_t;

/** Element type of a buffer; bf16 and f16 are reduced with FP32 accumulation. */
typedef enum seam_dtype {
  SEAM_DTYPE_F32 = 0,
  SEAM_DTYPE_F64 = 1,
  SEAM_DTYPE_BF16 = 2,
  SEAM_DTYPE_F16 = 3,
  SEAM_DTYPE_I32 = 4,
  SEAM_DTYPE_U8 = 5,
  SEAM_DTYPE_FP8_E4M3 = 6, /**< moved (gathers, broadcast), not reduced */
  /** Not a dtype: keeps the type as wide as an int, so any int passed is a value the calls refuse. */
  SEAM_DTYPE_MAX_ENUM = 0x7fffffff
} seam_dtype_t;

/** Reduction of all-reduce and reduce-scatter(v). */
typedef enum seam_reduce_op {
  SEAM_OP_SUM = 0,
  SEAM_OP_MAX = 1,
  SEAM_OP_MIN = 2,
  /** Not an op: as SEAM_DTYPE_MAX_ENUM. */
  SEAM_OP_MAX_ENUM = 0x7fffffff
} seam_reduce_op_t;

/** A communicator: a group of ranks. Opaque; released with seam_comm_destroy. */
typedef struct seam_comm* seam_comm_t;
/** The handle of a non-blocking operation. Opaque; released with seam_work_free. */
typedef struct seam_work* seam_work_t;

/* ---- errors and build ---------------------------------------------------------------------- */

/** Message of the last call on this thread that failed ("" if none); valid until this thread's
 *  next failing Seam call. A successful call leaves it as it was. */
SEAM_API const char* seam_last_error(void);
/** A constant name for a status code ("SEAM_ERR_TIMEOUT"). */
SEAM_API const char* seam_status_name(seam_status_t status);
/** 1 when this Seam was built with CUDA (the *_device calls work), else 0. */
SEAM_API int seam_has_cuda(void);
/** Bytes per element of dtype, 0 for an unknown value. */
SEAM_API size_t seam_dtype_size(seam_dtype_t dtype);

/* ---- communicators ------------------------------------------------------------------------- */

/** The world communicator from the environment: the TCP store if SEAM_STORE_ADDR (with
 *  SEAM_RANK, SEAM_WORLD_SIZE, SEAM_JOB_TOKEN) is set, else mpirun's PMIx. Collective. */
SEAM_API seam_status_t seam_comm_create_world(seam_comm_t* out);
/** The world communicator through a TCP store that rank 0 serves at store_addr ("host:port",
 *  one of rank 0's addresses or 0.0.0.0); job_token: the same at least 32 random characters on every
 *  rank. For engines that start their own ranks. Collective. */
SEAM_API seam_status_t seam_comm_create_store(const char* store_addr, int rank, int world_size,
                                              const char* job_token, seam_comm_t* out);
/** Releases a communicator (and its device side); NULL is ignored. Complete its works first. */
SEAM_API void seam_comm_destroy(seam_comm_t comm);
/** This process's rank in comm, or -1 when comm is NULL. */
SEAM_API int seam_comm_rank(seam_comm_t comm);
/** The number of ranks of comm, or -1 when comm is NULL. */
SEAM_API int seam_comm_size(seam_comm_t comm);
/** MPI_Comm_split: ranks with the same color form a communicator ordered by (key, rank).
 *  Collective over all of comm's ranks; a negative color stores NULL in *out. */
SEAM_API seam_status_t seam_comm_split(seam_comm_t comm, int color, int key, seam_comm_t* out);
/** A communicator of ranks[0..nranks) of comm, in that order; collective over those ranks.
 *  Stores NULL in *out on a rank not listed. */
SEAM_API seam_status_t seam_comm_group(seam_comm_t comm, const int* ranks, size_t nranks,
                                       seam_comm_t* out);

/* ---- work handles -------------------------------------------------------------------------- */

/** Blocks until the operation completes; its failure, if any, is the status. */
SEAM_API seam_status_t seam_work_wait(seam_work_t work);
/** Advances the operation without blocking; *done = 1 once it completed, else 0. */
SEAM_API seam_status_t seam_work_test(seam_work_t work, int* done);
/** Releases a work handle; NULL is ignored. Free it once it completed (wait, or test said done). */
SEAM_API void seam_work_free(seam_work_t work);

/* ---- collectives on host memory ------------------------------------------------------------ */

/** recv[i] = op over ranks of send[i], i < count. */
SEAM_API seam_status_t seam_all_reduce(seam_comm_t comm, const void* send, void* recv, size_t count,
                                       seam_dtype_t dtype, seam_reduce_op_t op, seam_work_t* work);
/** recv (recv_count elements) = this rank's block of the reduction of send (size * recv_count). */
SEAM_API seam_status_t seam_reduce_scatter(seam_comm_t comm, const void* send, void* recv,
                                           size_t recv_count, seam_dtype_t dtype,
                                           seam_reduce_op_t op, seam_work_t* work);
/** counts (seam_comm_size entries): counts[r] elements land on rank r (zero allowed); send holds
 *  their sum. */
SEAM_API seam_status_t seam_reduce_scatterv(seam_comm_t comm, const void* send, void* recv,
                                            const size_t* counts, seam_dtype_t dtype,
                                            seam_reduce_op_t op, seam_work_t* work);
/** recv (size * send_count elements) = every rank's send, in rank order. */
SEAM_API seam_status_t seam_all_gather(seam_comm_t comm, const void* send, void* recv,
                                       size_t send_count, seam_dtype_t dtype, seam_work_t* work);
/** counts (seam_comm_size entries): rank r contributes counts[r] elements; recv holds their sum,
 *  in rank order. */
SEAM_API seam_status_t seam_all_gatherv(seam_comm_t comm, const void* send, void* recv,
                                        const size_t* counts, seam_dtype_t dtype, seam_work_t* work);
/** buffer (count elements) on every rank = root's buffer. */
SEAM_API seam_status_t seam_broadcast(seam_comm_t comm, void* buffer, size_t count,
                                      seam_dtype_t dtype, int root, seam_work_t* work);
/** Completes once every rank of comm has entered. */
SEAM_API seam_status_t seam_barrier(seam_comm_t comm, seam_work_t* work);

/* ---- collectives on CUDA device memory ------------------------------------------------------
 * stream is a cudaStream_t passed as void*; each call is enqueued on it and
 * returns at once, and its work completes when the stream reaches it. work may be NULL: the call
 * is then ordered on the stream alone (no host wait; a failure shows on the next call). Without
 * CUDA in the build every call here returns SEAM_ERR_NOT_SUPPORTED. */

/** Sets up comm's device side on CUDA device `device` (-1: the current one); collective, once,
 *  before the calls below. Ranks on several hosts stage through host memory (docs/device.md). */
SEAM_API seam_status_t seam_comm_device_init(seam_comm_t comm, int device);
/** seam_all_reduce on device memory. */
SEAM_API seam_status_t seam_all_reduce_device(seam_comm_t comm, const void* send, void* recv,
                                              size_t count, seam_dtype_t dtype, seam_reduce_op_t op,
                                              void* stream, seam_work_t* work);
/** seam_reduce_scatter on device memory. */
SEAM_API seam_status_t seam_reduce_scatter_device(seam_comm_t comm, const void* send, void* recv,
                                                  size_t recv_count, seam_dtype_t dtype,
                                                  seam_reduce_op_t op, void* stream,
                                                  seam_work_t* work);
/** seam_reduce_scatterv on device memory (counts in host memory). */
SEAM_API seam_status_t seam_reduce_scatterv_device(seam_comm_t comm, const void* send, void* recv,
                                                   const size_t* counts, seam_dtype_t dtype,
                                                   seam_reduce_op_t op, void* stream,
                                                   seam_work_t* work);
/** seam_all_gather on device memory. */
SEAM_API seam_status_t seam_all_gather_device(seam_comm_t comm, const void* send, void* recv,
                                              size_t send_count, seam_dtype_t dtype, void* stream,
                                              seam_work_t* work);
/** seam_all_gatherv on device memory (counts in host memory). */
SEAM_API seam_status_t seam_all_gatherv_device(seam_comm_t comm, const void* send, void* recv,
                                               const size_t* counts, seam_dtype_t dtype,
                                               void* stream, seam_work_t* work);
/** seam_broadcast on device memory. */
SEAM_API seam_status_t seam_broadcast_device(seam_comm_t comm, void* buffer, size_t count,
                                             seam_dtype_t dtype, int root, void* stream,
                                             seam_work_t* work);
/** count elements of buffer to rank peer, paired with peer's seam_recv_device of the same count
 *  and dtype in issue order; the send holds its stream until the peer has the data. */
SEAM_API seam_status_t seam_send_device(seam_comm_t comm, const void* buffer, size_t count,
                                        seam_dtype_t dtype, int peer, void* stream,
                                        seam_work_t* work);
/** count elements from rank peer into buffer. */
SEAM_API seam_status_t seam_recv_device(seam_comm_t comm, void* buffer, size_t count,
                                        seam_dtype_t dtype, int peer, void* stream,
                                        seam_work_t* work);

#ifdef __cplusplus
}
#endif

#endif /* SEAM_SEAM_H */
