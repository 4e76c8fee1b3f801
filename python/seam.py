"""Seam's collectives from Python, through the C API (libseam_c, include/seam/seam.h).

Host buffers are anything with the buffer protocol, C-contiguous and writable (array.array,
bytearray, numpy arrays, memoryview); the element type comes from the buffer's format or from
`dtype=`, and each buffer must hold exactly the elements its call reads or writes (checked). Device buffers are raw CUDA pointers with a stream (torch: `t.data_ptr()` and
`torch.cuda.current_stream().cuda_stream`). Every call is non-blocking and returns a Work;
failures raise SeamError with Seam's message; bad arguments raise ValueError or TypeError (Seam's
own refusals as SeamValueError / SeamTypeError) before anything is sent.

The library is SEAM_C_LIBRARY when set, else libseam_c.so beside this file's folder (an
installed prefix: <libdir>/python/seam.py), else the one the dynamic loader finds.
"""

import ctypes
import enum
import os

__all__ = ["Communicator", "DType", "ReduceOp", "SeamError", "SeamTypeError", "SeamValueError", "Work", "has_cuda"]


class DType(enum.IntEnum):
    """Element types (seam_dtype_t); BF16 and F16 are reduced with FP32 accumulation."""

    F32 = 0
    F64 = 1
    BF16 = 2
    F16 = 3
    I32 = 4
    U8 = 5
    FP8_E4M3 = 6


class ReduceOp(enum.IntEnum):
    """Reductions of all_reduce and reduce_scatter(v) (seam_reduce_op_t)."""

    SUM = 0
    MAX = 1
    MIN = 2


class SeamError(Exception):
    """A failed Seam call: `status` is its seam_status_t name (SEAM_ERR_COMM, SEAM_ERR_TIMEOUT...)."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status = status


class SeamValueError(SeamError, ValueError):
    """SEAM_ERR_VALUE: a bad argument, refused before anything was sent."""


class SeamTypeError(SeamError, TypeError):
    """SEAM_ERR_TYPE: an argument of the wrong kind, refused before anything was sent."""


_ERRORS = {"SEAM_ERR_VALUE": SeamValueError, "SEAM_ERR_TYPE": SeamTypeError}


def _load():
    path = os.environ.get("SEAM_C_LIBRARY")
    if not path:
        beside = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "libseam_c.so")
        path = beside if os.path.exists(beside) else "libseam_c.so"
    lib = ctypes.CDLL(path)
    p, i, z, s = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_char_p
    pp = ctypes.POINTER(ctypes.c_void_p)
    zp = ctypes.POINTER(ctypes.c_size_t)
    signatures = {
        "seam_last_error": (s, []),
        "seam_status_name": (s, [i]),
        "seam_has_cuda": (i, []),
        "seam_dtype_size": (z, [i]),
        "seam_comm_create_world": (i, [pp]),
        "seam_comm_create_store": (i, [s, i, i, s, pp]),
        "seam_comm_destroy": (None, [p]),
        "seam_comm_rank": (i, [p]),
        "seam_comm_size": (i, [p]),
        "seam_comm_split": (i, [p, i, i, pp]),
        "seam_comm_group": (i, [p, ctypes.POINTER(ctypes.c_int), z, pp]),
        "seam_work_wait": (i, [p]),
        "seam_work_test": (i, [p, ctypes.POINTER(ctypes.c_int)]),
        "seam_work_free": (None, [p]),
        "seam_all_reduce": (i, [p, p, p, z, i, i, pp]),
        "seam_reduce_scatter": (i, [p, p, p, z, i, i, pp]),
        "seam_reduce_scatterv": (i, [p, p, p, zp, i, i, pp]),
        "seam_all_gather": (i, [p, p, p, z, i, pp]),
        "seam_all_gatherv": (i, [p, p, p, zp, i, pp]),
        "seam_broadcast": (i, [p, p, z, i, i, pp]),
        "seam_barrier": (i, [p, pp]),
        "seam_comm_device_init": (i, [p, i]),
        "seam_all_reduce_device": (i, [p, p, p, z, i, i, p, pp]),
        "seam_reduce_scatter_device": (i, [p, p, p, z, i, i, p, pp]),
        "seam_reduce_scatterv_device": (i, [p, p, p, zp, i, i, p, pp]),
        "seam_all_gather_device": (i, [p, p, p, z, i, p, pp]),
        "seam_all_gatherv_device": (i, [p, p, p, zp, i, p, pp]),
        "seam_broadcast_device": (i, [p, p, z, i, i, p, pp]),
        "seam_send_device": (i, [p, p, z, i, i, p, pp]),
        "seam_recv_device": (i, [p, p, z, i, i, p, pp]),
    }
    for name, (restype, argtypes) in signatures.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = restype, argtypes
    return lib


_lib = _load()


def _check(status):
    if status != 0:
        name = _lib.seam_status_name(status).decode()
        raise _ERRORS.get(name, SeamError)(name, _lib.seam_last_error().decode())


def has_cuda():
    """Whether this Seam was built with CUDA (the *_device calls work)."""
    return bool(_lib.seam_has_cuda())


# Buffer formats (struct module codes) whose element type is plain; others need dtype=.
_FORMATS = {"f": DType.F32, "d": DType.F64, "e": DType.F16, "B": DType.U8}
_INT32_FORMATS = {"i", "l", "q"}


class _Host:
    """A host buffer's address, byte size and element type; holds the buffer while a call runs."""

    def __init__(self, buffer, dtype):
        view = memoryview(buffer)
        if not view.c_contiguous:
            raise ValueError("Seam needs C-contiguous buffers")
        if view.readonly:
            raise TypeError("Seam needs writable buffers (bytes is read-only: use bytearray)")
        if dtype is None:
            fmt = view.format.lstrip("@=<")
            dtype = _FORMATS.get(fmt)
            if fmt in _INT32_FORMATS and view.itemsize == 4:
                dtype = DType.I32
            if dtype is None:
                raise TypeError(f"buffer format '{view.format}': pass dtype= (BF16 rows are 16-bit words)")
        self.dtype = DType(dtype)
        self.nbytes = view.nbytes
        self.raw = (ctypes.c_char * self.nbytes).from_buffer(view.cast("B"))
        self.address = ctypes.addressof(self.raw)

    def count(self):
        size = _lib.seam_dtype_size(self.dtype)
        if self.nbytes % size:
            raise ValueError(f"a buffer of {self.nbytes} bytes holds no whole number of {self.dtype.name}")
        return self.nbytes // size


class Work:
    """A non-blocking call: wait() blocks until it completes, test() says whether it has."""

    def __init__(self, handle, keep):
        self._handle = handle
        self._keep = keep  # the communicator, buffers and counts the call uses until it completes

    def wait(self):
        if self._handle:
            try:
                _check(_lib.seam_work_wait(self._handle))
            finally:
                self._release()

    def test(self):
        if not self._handle:
            return True
        done = ctypes.c_int(0)
        try:
            _check(_lib.seam_work_test(self._handle, ctypes.byref(done)))
        except SeamError:
            self._release()
            raise
        if done.value:
            self._release()
        return bool(done.value)

    def _release(self):
        _lib.seam_work_free(self._handle)
        self._handle, self._keep = None, None

    def __del__(self):
        # A call still running when its handle is dropped is waited for: its buffers go with it.
        if getattr(self, "_handle", None):
            try:
                self.wait()
            except Exception:  # nothing may escape a destructor (at interpreter exit neither)
                pass


def _expect(buffer, name, count):
    if buffer.count() != count:
        raise ValueError(f"{name} holds {buffer.count()} elements, the call needs {count}")


def _counts(values, size):
    if len(values) != size:
        raise ValueError(f"counts needs one entry per rank ({size}), got {len(values)}")
    return (ctypes.c_size_t * size)(*values)


class Communicator:
    """A group of ranks (seam_comm_t). Collective calls must be issued in the same order on every rank."""

    def __init__(self, handle):
        if not handle:
            raise ValueError("no communicator")
        self._handle = ctypes.c_void_p(handle)

    @classmethod
    def world(cls):
        """The world from the environment: the TCP store (SEAM_STORE_ADDR, SEAM_RANK,
        SEAM_WORLD_SIZE, SEAM_JOB_TOKEN) when set, else mpirun's PMIx. Collective."""
        out = ctypes.c_void_p()
        _check(_lib.seam_comm_create_world(ctypes.byref(out)))
        return cls(out.value)

    @classmethod
    def from_store(cls, address, rank, size, job_token):
        """The world through a TCP store that rank 0 serves at "host:port". Collective."""
        out = ctypes.c_void_p()
        _check(_lib.seam_comm_create_store(address.encode(), rank, size, job_token.encode(), ctypes.byref(out)))
        return cls(out.value)

    def close(self):
        """Releases the communicator (complete its works first)."""
        if self._handle:
            _lib.seam_comm_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None):
            self.close()

    @property
    def rank(self):
        return _lib.seam_comm_rank(self._handle)

    @property
    def size(self):
        return _lib.seam_comm_size(self._handle)

    def split(self, color, key):
        """MPI_Comm_split; None on ranks with a negative color. Collective."""
        out = ctypes.c_void_p()
        _check(_lib.seam_comm_split(self._handle, color, key, ctypes.byref(out)))
        return Communicator(out.value) if out.value else None

    def group(self, ranks):
        """A communicator of `ranks` in that order; None on a rank not listed. Collective over them."""
        array = (ctypes.c_int * len(ranks))(*ranks)
        out = ctypes.c_void_p()
        _check(_lib.seam_comm_group(self._handle, array, len(ranks), ctypes.byref(out)))
        return Communicator(out.value) if out.value else None

    def _call(self, fn, *args, keep=()):
        work = ctypes.c_void_p()
        _check(fn(self._handle, *args, ctypes.byref(work)))
        return Work(work, (self, *keep))  # the communicator outlives its works

    # ---- host memory ----

    def all_reduce(self, send, recv=None, op=ReduceOp.SUM, dtype=None):
        """recv = op over ranks of send (recv None: in place)."""
        s = _Host(send, dtype)
        r = s if recv is None else _Host(recv, s.dtype)
        _expect(r, "recv", s.count())
        return self._call(_lib.seam_all_reduce, s.address, r.address, s.count(), s.dtype, op, keep=(s, r))

    def reduce_scatter(self, send, recv, op=ReduceOp.SUM, dtype=None):
        """recv = this rank's block (len(recv) elements) of the reduction of send."""
        s = _Host(send, dtype)
        r = _Host(recv, s.dtype)
        _expect(s, "send", r.count() * self.size)
        return self._call(_lib.seam_reduce_scatter, s.address, r.address, r.count(), s.dtype, op, keep=(s, r))

    def reduce_scatterv(self, send, recv, counts, op=ReduceOp.SUM, dtype=None):
        """counts[r] elements of the reduction land on rank r."""
        s = _Host(send, dtype)
        r = _Host(recv, s.dtype)
        c = _counts(counts, self.size)
        _expect(s, "send", sum(counts))
        _expect(r, "recv", counts[self.rank])
        return self._call(_lib.seam_reduce_scatterv, s.address, r.address, c, s.dtype, op, keep=(s, r, c))

    def all_gather(self, send, recv, dtype=None):
        """recv = every rank's send, in rank order."""
        s = _Host(send, dtype)
        r = _Host(recv, s.dtype)
        _expect(r, "recv", s.count() * self.size)
        return self._call(_lib.seam_all_gather, s.address, r.address, s.count(), s.dtype, keep=(s, r))

    def all_gatherv(self, send, recv, counts, dtype=None):
        """Rank r contributes counts[r] elements; recv holds them all in rank order."""
        s = _Host(send, dtype)
        r = _Host(recv, s.dtype)
        c = _counts(counts, self.size)
        _expect(s, "send", counts[self.rank])
        _expect(r, "recv", sum(counts))
        return self._call(_lib.seam_all_gatherv, s.address, r.address, c, s.dtype, keep=(s, r, c))

    def broadcast(self, buffer, root, dtype=None):
        """buffer on every rank = root's buffer."""
        b = _Host(buffer, dtype)
        return self._call(_lib.seam_broadcast, b.address, b.count(), b.dtype, root, keep=(b,))

    def barrier(self):
        """Completes once every rank has entered."""
        return self._call(_lib.seam_barrier)

    # ---- CUDA device memory: pointers (ints), element counts, a stream (int; 0 = default) ----

    def device_init(self, device=-1):
        """Sets up the device side on CUDA device `device` (-1: the current one). Collective, once."""
        _check(_lib.seam_comm_device_init(self._handle, device))

    def all_reduce_device(self, send, recv, count, dtype, op=ReduceOp.SUM, stream=0):
        return self._call(_lib.seam_all_reduce_device, send, recv, count, dtype, op, stream)

    def reduce_scatter_device(self, send, recv, recv_count, dtype, op=ReduceOp.SUM, stream=0):
        return self._call(_lib.seam_reduce_scatter_device, send, recv, recv_count, dtype, op, stream)

    def reduce_scatterv_device(self, send, recv, counts, dtype, op=ReduceOp.SUM, stream=0):
        c = _counts(counts, self.size)
        return self._call(_lib.seam_reduce_scatterv_device, send, recv, c, dtype, op, stream, keep=(c,))

    def all_gather_device(self, send, recv, send_count, dtype, stream=0):
        return self._call(_lib.seam_all_gather_device, send, recv, send_count, dtype, stream)

    def all_gatherv_device(self, send, recv, counts, dtype, stream=0):
        c = _counts(counts, self.size)
        return self._call(_lib.seam_all_gatherv_device, send, recv, c, dtype, stream, keep=(c,))

    def broadcast_device(self, buffer, count, dtype, root, stream=0):
        return self._call(_lib.seam_broadcast_device, buffer, count, dtype, root, stream)

    def send_device(self, buffer, count, dtype, peer, stream=0):
        return self._call(_lib.seam_send_device, buffer, count, dtype, peer, stream)

    def recv_device(self, buffer, count, dtype, peer, stream=0):
        return self._call(_lib.seam_recv_device, buffer, count, dtype, peer, stream)
