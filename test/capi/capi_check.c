/* The C API from C: world creation (mpirun, or --store: the TCP store with every field passed
 * explicitly), split and group, the host collectives with exact expected values, work handles
 * (wait and test), and bad arguments that must return their code and a message naming the call,
 * leaving the communicator usable. Run at 3 ranks (any count >= 2 works). */
#include <seam/seam.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me = -1;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "capi_check rank %d: %s:%d: %s: ", me, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define OK(call)                                                                            \
  do {                                                                                      \
    seam_status_t s_ = (call);                                                              \
    CHECK(s_ == SEAM_OK, "%s: %s", seam_status_name(s_), seam_last_error());               \
  } while (0)

/* The call must fail with `code` and a message containing both `call_name` and `part`. */
static void expect_failure(seam_status_t got, seam_status_t code, const char* call_name, const char* part) {
  const char* msg = seam_last_error();
  CHECK(got == code, "got %s, expected %s (%s)", seam_status_name(got), seam_status_name(code), msg);
  CHECK(strstr(msg, call_name) != NULL && strstr(msg, part) != NULL, "message '%s' lacks '%s' or '%s'", msg,
        call_name, part);
}

static seam_comm_t create(int argc, char** argv) {
  seam_comm_t world = NULL;
  if (argc > 1 && strcmp(argv[1], "--store") == 0) {
    /* Read what the launcher set, then clear it: the explicit arguments alone must suffice. */
    const char* addr = getenv("SEAM_STORE_ADDR");
    const char* token = getenv("SEAM_JOB_TOKEN");
    const char* rank = getenv("SEAM_RANK");
    const char* size = getenv("SEAM_WORLD_SIZE");
    CHECK(addr && token && rank && size, "--store needs SEAM_STORE_ADDR, SEAM_JOB_TOKEN, SEAM_RANK, SEAM_WORLD_SIZE");
    char addr_copy[256], token_copy[256];
    snprintf(addr_copy, sizeof addr_copy, "%s", addr);
    snprintf(token_copy, sizeof token_copy, "%s", token);
    const int r = atoi(rank), n = atoi(size);
    unsetenv("SEAM_STORE_ADDR");
    unsetenv("SEAM_JOB_TOKEN");
    unsetenv("SEAM_RANK");
    unsetenv("SEAM_WORLD_SIZE");
    expect_failure(seam_comm_create_store(addr_copy, r, n, "", &world), SEAM_ERR_VALUE, "seam_comm_create_store",
                   "job_token");
    CHECK(world == NULL, "a failed create left a handle");
    OK(seam_comm_create_store(addr_copy, r, n, token_copy, &world));
    CHECK(seam_comm_rank(world) == r && seam_comm_size(world) == n, "store world %d/%d, expected %d/%d",
          seam_comm_rank(world), seam_comm_size(world), r, n);
  } else {
    OK(seam_comm_create_world(&world));
  }
  return world;
}

/* f32 sum, non-blocking, completed by polling seam_work_test: element i of rank r is r + 1 + i. */
static void all_reduce_sum(seam_comm_t comm) {
  enum { count = 1000 };
  const int n = seam_comm_size(comm), r = seam_comm_rank(comm);
  float* send = malloc(count * sizeof(float));
  float* recv = malloc(count * sizeof(float));
  for (int i = 0; i < count; ++i) send[i] = (float)(r + 1 + i);
  seam_work_t work = NULL;
  OK(seam_all_reduce(comm, send, recv, count, SEAM_DTYPE_F32, SEAM_OP_SUM, &work));
  CHECK(work != NULL, "no work handle");
  int done = 0;
  while (!done) OK(seam_work_test(work, &done));
  OK(seam_work_wait(work)); /* waiting on a completed work returns at once */
  seam_work_free(work);
  for (int i = 0; i < count; ++i) {
    const float expected = (float)(n * (n + 1) / 2 + n * i);
    CHECK(recv[i] == expected, "all_reduce f32 sum: element %d is %g, expected %g", i, recv[i], expected);
  }
  free(send);
  free(recv);
}

/* i32 max in place, blocking (work NULL): element i of rank r is (r * 7 + i) % 11. */
static void all_reduce_max_in_place(seam_comm_t comm) {
  enum { count = 37 };
  const int n = seam_comm_size(comm), r = seam_comm_rank(comm);
  int32_t buf[count];
  for (int i = 0; i < count; ++i) buf[i] = (r * 7 + i) % 11;
  OK(seam_all_reduce(comm, buf, buf, count, SEAM_DTYPE_I32, SEAM_OP_MAX, NULL));
  for (int i = 0; i < count; ++i) {
    int32_t expected = 0;
    for (int q = 0; q < n; ++q)
      if ((q * 7 + i) % 11 > expected) expected = (q * 7 + i) % 11;
    CHECK(buf[i] == expected, "all_reduce i32 max: element %d is %d, expected %d", i, buf[i], expected);
  }
}

/* f64: rank q's element j is q * 1000 + j; rank r receives counts[r] = r + 1 elements. */
static void reduce_scatterv_sum(seam_comm_t comm) {
  const int n = seam_comm_size(comm), r = seam_comm_rank(comm);
  size_t counts[64], total = 0, offset = 0;
  for (int q = 0; q < n; ++q) {
    counts[q] = (size_t)q + 1;
    if (q < r) offset += counts[q];
    total += counts[q];
  }
  double* send = malloc(total * sizeof(double));
  double recv[64];
  for (size_t j = 0; j < total; ++j) send[j] = r * 1000.0 + (double)j;
  seam_work_t work = NULL;
  OK(seam_reduce_scatterv(comm, send, recv, counts, SEAM_DTYPE_F64, SEAM_OP_SUM, &work));
  OK(seam_work_wait(work));
  seam_work_free(work);
  for (size_t k = 0; k < counts[r]; ++k) {
    const double expected = 1000.0 * n * (n - 1) / 2 + (double)n * (double)(offset + k);
    CHECK(recv[k] == expected, "reduce_scatterv f64: element %zu is %g, expected %g", k, recv[k], expected);
  }
  free(send);
}

/* f32 min: rank q's element j is (5j + 3q) % 7 - 2.5; rank r gets block r of 5 elements. */
static float min_input(int q, int j) { return (float)((j * 5 + q * 3) % 7) - 2.5f; }

static void reduce_scatter_min(seam_comm_t comm) {
  enum { block = 5 };
  const int n = seam_comm_size(comm), r = seam_comm_rank(comm);
  float* send = malloc((size_t)n * block * sizeof(float));
  float recv[block];
  for (int j = 0; j < n * block; ++j) send[j] = min_input(r, j);
  OK(seam_reduce_scatter(comm, send, recv, block, SEAM_DTYPE_F32, SEAM_OP_MIN, NULL));
  for (int k = 0; k < block; ++k) {
    float expected = min_input(0, r * block + k);
    for (int q = 1; q < n; ++q)
      if (min_input(q, r * block + k) < expected) expected = min_input(q, r * block + k);
    CHECK(recv[k] == expected, "reduce_scatter f32 min: element %d is %g, expected %g", k, recv[k], expected);
  }
  free(send);
}

/* i32 all-gather of 3 elements a rank, then all-gatherv of r + 2 elements from rank r. */
static void gathers(seam_comm_t comm) {
  const int n = seam_comm_size(comm), r = seam_comm_rank(comm);
  int32_t mine[3] = {r * 10, r * 10 + 1, r * 10 + 2};
  int32_t* all = malloc((size_t)n * 3 * sizeof(int32_t));
  OK(seam_all_gather(comm, mine, all, 3, SEAM_DTYPE_I32, NULL));
  for (int q = 0; q < n; ++q)
    for (int k = 0; k < 3; ++k)
      CHECK(all[q * 3 + k] == q * 10 + k, "all_gather: element %d of rank %d is %d", k, q, all[q * 3 + k]);
  free(all);

  size_t counts[64], total = 0;
  for (int q = 0; q < n; ++q) total += counts[q] = (size_t)q + 2;
  int32_t send[66];
  for (int k = 0; k < r + 2; ++k) send[k] = -(r * 100 + k);
  int32_t* recv = malloc(total * sizeof(int32_t));
  seam_work_t work = NULL;
  OK(seam_all_gatherv(comm, send, recv, counts, SEAM_DTYPE_I32, &work));
  OK(seam_work_wait(work));
  seam_work_free(work);
  size_t at = 0;
  for (int q = 0; q < n; ++q)
    for (int k = 0; k < q + 2; ++k, ++at)
      CHECK(recv[at] == -(q * 100 + k), "all_gatherv: element %d of rank %d is %d", k, q, recv[at]);
  free(recv);
}

/* u8 broadcast from the last rank. */
static void broadcast_from_last(seam_comm_t comm) {
  enum { count = 300 };
  const int n = seam_comm_size(comm), r = seam_comm_rank(comm);
  uint8_t buf[count];
  for (int i = 0; i < count; ++i) buf[i] = (uint8_t)(r == n - 1 ? (i * 3 + 1) & 0xff : 0);
  OK(seam_broadcast(comm, buf, count, SEAM_DTYPE_U8, n - 1, NULL));
  for (int i = 0; i < count; ++i)
    CHECK(buf[i] == (uint8_t)((i * 3 + 1) & 0xff), "broadcast: byte %d is %d", i, buf[i]);
}

/* split by parity with the key reversing the order, then a group of the last and first ranks. */
static void sub_communicators(seam_comm_t world) {
  const int n = seam_comm_size(world), r = seam_comm_rank(world);
  seam_comm_t half = NULL;
  OK(seam_comm_split(world, r % 2, -r, &half));
  CHECK(half != NULL, "split returned no communicator");
  const int members = (n + 1 - r % 2) / 2;
  CHECK(seam_comm_size(half) == members, "split size %d, expected %d", seam_comm_size(half), members);
  /* Ranks of one parity, ordered by -r: the highest world rank first. */
  const int expected_rank = (n - 1 - r) / 2;
  CHECK(seam_comm_rank(half) == expected_rank, "split rank %d, expected %d", seam_comm_rank(half), expected_rank);
  int32_t v = r, sum = 0;
  OK(seam_all_reduce(half, &v, &sum, 1, SEAM_DTYPE_I32, SEAM_OP_SUM, NULL));
  int32_t expected_sum = 0;
  for (int q = r % 2; q < n; q += 2) expected_sum += q;
  CHECK(sum == expected_sum, "split all_reduce %d, expected %d", sum, expected_sum);
  seam_comm_destroy(half);

  seam_comm_t none = (seam_comm_t)1;
  OK(seam_comm_split(world, -1, 0, &none));
  CHECK(none == NULL, "negative color gave a communicator");

  const int ends[2] = {n - 1, 0};
  seam_comm_t pair = NULL;
  if (r == 0 || r == n - 1) {
    OK(seam_comm_group(world, ends, 2, &pair));
    CHECK(pair != NULL && seam_comm_size(pair) == 2, "group of two");
    CHECK(seam_comm_rank(pair) == (r == n - 1 ? 0 : 1), "group rank %d", seam_comm_rank(pair));
    float x = (float)r, y = 0;
    OK(seam_all_reduce(pair, &x, &y, 1, SEAM_DTYPE_F32, SEAM_OP_SUM, NULL));
    CHECK(y == (float)(n - 1), "group all_reduce %g", y);
    seam_comm_destroy(pair);
  }
}

/* Calls every rank gets wrong alike: each must return its code and name itself, and the
 * communicator must stay usable. */
static void bad_arguments(seam_comm_t comm) {
  const int n = seam_comm_size(comm);
  float a[4] = {0, 0, 0, 0}, b[4];
  seam_work_t work = (seam_work_t)1;
  expect_failure(seam_all_reduce(comm, a, b, 4, (seam_dtype_t)99, SEAM_OP_SUM, &work), SEAM_ERR_TYPE,
                 "seam_all_reduce", "dtype 99");
  CHECK(work == NULL, "a failed call left a work handle");
  expect_failure(seam_all_reduce(NULL, a, b, 4, SEAM_DTYPE_F32, SEAM_OP_SUM, &work), SEAM_ERR_VALUE,
                 "seam_all_reduce", "comm is NULL");
  expect_failure(seam_all_reduce(comm, a, b, 4, SEAM_DTYPE_F32, (seam_reduce_op_t)7, NULL), SEAM_ERR_VALUE,
                 "seam_all_reduce", "op 7");
  expect_failure(seam_all_reduce(comm, a, b, 4, SEAM_DTYPE_FP8_E4M3, SEAM_OP_SUM, NULL), SEAM_ERR_VALUE,
                 "all_reduce", "cannot reduce");
  expect_failure(seam_broadcast(comm, a, 4, SEAM_DTYPE_F32, n, NULL), SEAM_ERR_VALUE, "broadcast", "root");
  expect_failure(seam_all_reduce(comm, NULL, b, 4, SEAM_DTYPE_F32, SEAM_OP_SUM, NULL), SEAM_ERR_VALUE,
                 "all_reduce", "null");
  expect_failure(seam_reduce_scatterv(comm, a, b, NULL, SEAM_DTYPE_F32, SEAM_OP_SUM, NULL), SEAM_ERR_VALUE,
                 "seam_reduce_scatterv", "counts is NULL");
  expect_failure(seam_work_wait(NULL), SEAM_ERR_VALUE, "seam_work_wait", "NULL");
  if (!seam_has_cuda()) {
    expect_failure(seam_all_reduce_device(comm, a, b, 4, SEAM_DTYPE_F32, SEAM_OP_SUM, NULL, NULL),
                   SEAM_ERR_NOT_SUPPORTED, "seam_all_reduce_device", "without CUDA");
    expect_failure(seam_comm_device_init(comm, 0), SEAM_ERR_NOT_SUPPORTED, "seam_comm_device_init", "without CUDA");
  } else {
    expect_failure(seam_all_reduce_device(comm, a, b, 4, SEAM_DTYPE_F32, SEAM_OP_SUM, NULL, NULL), SEAM_ERR_USAGE,
                   "seam_all_reduce_device", "seam_comm_device_init");
    expect_failure(seam_send_device(comm, a, 4, SEAM_DTYPE_F32, 0, NULL, NULL), SEAM_ERR_USAGE, "seam_send_device",
                   "seam_comm_device_init");
    expect_failure(seam_recv_device(comm, b, 4, SEAM_DTYPE_F32, 0, NULL, NULL), SEAM_ERR_USAGE, "seam_recv_device",
                   "seam_comm_device_init");
  }
  CHECK(seam_comm_rank(NULL) == -1 && seam_comm_size(NULL) == -1, "getters on NULL");
  CHECK(seam_dtype_size(SEAM_DTYPE_BF16) == 2 && seam_dtype_size((seam_dtype_t)42) == 0, "seam_dtype_size");
  /* Still usable: the failed calls were refused before any rank sent anything. */
  all_reduce_sum(comm);
}

int main(int argc, char** argv) {
  seam_comm_t world = create(argc, argv);
  me = seam_comm_rank(world);
  CHECK(seam_comm_size(world) >= 2, "run at 2 ranks or more");
  all_reduce_sum(world);
  all_reduce_max_in_place(world);
  reduce_scatterv_sum(world);
  reduce_scatter_min(world);
  gathers(world);
  broadcast_from_last(world);
  sub_communicators(world);
  bad_arguments(world);
  OK(seam_barrier(world, NULL));
  const int n = seam_comm_size(world);
  seam_comm_destroy(world);
  printf("capi_check: rank %d of %d ok\n", me, n);
  return 0;
}
