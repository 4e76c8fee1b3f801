/* An all-reduce through Seam's C API, built against the installed package. Run it under mpirun
 * (any number of ranks): every rank sums 1..N scaled by its rank + 1 and checks the result. */
#include <seam/seam.h>
#include <seam/version.h>
#include <stdio.h>

int main(void) {
  seam_comm_t world = NULL;
  if (seam_comm_create_world(&world) != SEAM_OK) {
    fprintf(stderr, "seam: %s\n", seam_last_error());
    return 1;
  }
  const int rank = seam_comm_rank(world), size = seam_comm_size(world);
  enum { kCount = 1000 };
  static float data[kCount];
  for (int i = 0; i < kCount; ++i) data[i] = (float)((rank + 1) * i);
  /* NULL work: the call is blocking. */
  if (seam_all_reduce(world, data, data, kCount, SEAM_DTYPE_F32, SEAM_OP_SUM, NULL) != SEAM_OK) {
    fprintf(stderr, "rank %d: all-reduce failed: %s\n", rank, seam_last_error());
    return 1;
  }
  const float ranks_sum = (float)(size * (size + 1) / 2);
  int wrong = 0;
  for (int i = 0; i < kCount; ++i) wrong += data[i] != ranks_sum * (float)i;
  if (rank == 0) printf("seam %s: all-reduce over %d ranks: %s\n", SEAM_VERSION_STRING, size, wrong ? "WRONG" : "ok");
  seam_comm_destroy(world);
  return wrong ? 1 : 0;
}
