// Work handles: the C face of comm::Work.
#include "runtime/capi/handles.h"
#include "runtime/capi/status.h"

namespace seam::capi {

void hand_over(comm::Work work, seam_work_t* out) {
  if (!out) {
    work.wait();
    return;
  }
  *out = new seam_work{std::move(work)};
}

}  // namespace seam::capi

using seam::capi::guarded;

extern "C" {

seam_status_t seam_work_wait(seam_work_t work) {
  return guarded("seam_work_wait", [&] {
    if (!work) throw seam::ValueError("seam_work_wait: work is NULL");
    work->work.wait();
  });
}

seam_status_t seam_work_test(seam_work_t work, int* done) {
  if (done) *done = 0;
  return guarded("seam_work_test", [&] {
    if (!work) throw seam::ValueError("seam_work_test: work is NULL");
    if (!done) throw seam::ValueError("seam_work_test: done is NULL");
    *done = work->work.test() ? 1 : 0;
  });
}

void seam_work_free(seam_work_t work) { delete work; }

}  // extern "C"
