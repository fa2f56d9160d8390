"""Kernel arguments declared once (cljacobi.host.signatures) and their use."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from cljacobi.host.factorization import _RECORD_DTYPE, BunchParlettSpec
from cljacobi.host.hz import HZ_COUNTERS, HZSpec
from cljacobi.host.programs import build_program, render
from cljacobi.host.signatures import (
    KernelSignature,
    buffer,
    c_defines,
    c_struct,
    int_arg,
    kernels_reused,
    real_arg,
)

SOURCE = """
${struct}
${defines}
__kernel void probe(${signature.parameters})
{
    const int i = get_global_id(0);
    out[i] = CJAC_SCALE * scale * (double)(offset + i) + records[i].value + records[i].index;
}
"""


def _probe_signature():
    return KernelSignature("probe", (
        buffer("out", "__global double *"), int_arg("offset"), real_arg("scale"),
        buffer("records", "__global const cjac_probe_record *"),
    ))


def test_parameters_render_in_order():
    sig = _probe_signature()
    assert sig.parameters.split(",\n    ") == [
        "__global double *out", "const int offset", "const cjac_real scale",
        "__global const cjac_probe_record *records"]
    assert sig.position("scale") == 2
    with pytest.raises(KeyError, match="no argument 'nope'"):
        sig.position("nope")


def test_names_must_be_unique():
    with pytest.raises(ValueError, match="repeat"):
        KernelSignature("k", (int_arg("n"), int_arg("n")))


def test_bind_by_name_converts_scalars_and_struct_matches_dtype(queue):
    """The rendered struct has the numpy record's layout; values bound by name
    arrive at the right positions with the right C types."""
    from mako.template import Template

    record = np.dtype([("value", np.float64), ("index", np.int32), ("pad", np.int32)])
    sig = _probe_signature()
    source = "typedef double cjac_real;\n" + Template(SOURCE, strict_undefined=True).render(
        struct=c_struct("cjac_probe_record", record), defines=c_defines({"CJAC_SCALE": 2.0}),
        signature=sig)
    program = cl.Program(queue.context, source).build()
    n = 5
    records = np.zeros(n, record)
    records["value"] = np.arange(n) * 0.5
    records["index"] = np.arange(n) * 10
    mf = cl.mem_flags
    out = cl.Buffer(queue.context, mf.WRITE_ONLY, 8 * n)
    rec = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=records)
    kernel = sig.kernel(program, records=rec, scale=0.25, out=out, offset=3)  # any order
    cl.enqueue_nd_range_kernel(queue, kernel, (n,), None)
    result = np.empty(n)
    cl.enqueue_copy(queue, result, out)
    expected = 2.0 * 0.25 * (3 + np.arange(n)) + records["value"] + records["index"]
    np.testing.assert_array_equal(result, expected)
    with pytest.raises(TypeError, match="no value for"):
        sig.kernel(program, out=out)


SCALE_SOURCE = """
__kernel void scaled(__global double *out, const double scale)
{
    out[get_global_id(0)] = scale * get_global_id(0);
}
"""
_SCALED = KernelSignature("scaled", (buffer("out", "__global double *"), real_arg("scale")))


def _launch_and_read(queue, kernel, out, n=4):
    cl.enqueue_nd_range_kernel(queue, kernel, (n,), None)
    result = np.empty(n)
    cl.enqueue_copy(queue, result, out)
    return result


def test_kernels_reused_hands_the_kept_kernels_out_in_order(queue):
    """Within a block the kernels of one program's kernel are distinct
    objects; the next block gets the same objects in the same order, with
    the arguments it binds; nested blocks count as one; outside a block
    every kernel is new."""
    program = cl.Program(queue.context, SCALE_SOURCE).build()
    outs = [cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 32) for _ in range(3)]
    with kernels_reused():
        first = _SCALED.kernel(program, out=outs[0], scale=1.0)
        with kernels_reused():  # nested: the same block
            second = _SCALED.kernel(program, out=outs[1], scale=2.0)
        assert second is not first
        np.testing.assert_array_equal(_launch_and_read(queue, first, outs[0]), np.arange(4.0))
        np.testing.assert_array_equal(_launch_and_read(queue, second, outs[1]),
                                      2 * np.arange(4.0))
    with kernels_reused():
        again = [_SCALED.kernel(program, out=outs[2], scale=-3.0),
                 _SCALED.kernel(program, out=outs[0], scale=0.5),
                 _SCALED.kernel(program, out=outs[1], scale=7.0)]
        assert again[0] is first and again[1] is second
        assert again[2] is not first and again[2] is not second
        for kernel, out, scale in zip(again, (outs[2], outs[0], outs[1]), (-3.0, 0.5, 7.0)):
            np.testing.assert_array_equal(_launch_and_read(queue, kernel, out),
                                          scale * np.arange(4.0))
    outside = _SCALED.kernel(program, out=outs[0], scale=1.0)
    assert outside is not first and outside is not second


def test_kernels_reused_keep_enqueued_launches_as_they_were(queue):
    """A kernel bound again in a later block leaves the launches enqueued
    with its earlier arguments as they were (OpenCL captures them)."""
    program = cl.Program(queue.context, SCALE_SOURCE).build()
    n = 1 << 16
    outs = [cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * n) for _ in range(2)]
    with kernels_reused():
        kernel = _SCALED.kernel(program, out=outs[0], scale=1.0)
        cl.enqueue_nd_range_kernel(queue, kernel, (n,), None)
    with kernels_reused():
        assert _SCALED.kernel(program, out=outs[1], scale=-1.0) is kernel
        cl.enqueue_nd_range_kernel(queue, kernel, (n,), None)
    results = [np.empty(n), np.empty(n)]
    for result, out in zip(results, outs):
        cl.enqueue_copy(queue, result, out)
    np.testing.assert_array_equal(results[0], np.arange(n, dtype=np.float64))
    np.testing.assert_array_equal(results[1], -np.arange(n, dtype=np.float64))


NULL_SOURCE = """
__kernel void null_or_first(__global const double *a, __global double *out, const double scale)
{
    out[get_global_id(0)] = a ? scale * a[0] : -1.0;
}
"""
_NULL_OR_FIRST = KernelSignature("null_or_first", (
    buffer("a", "__global const double *"), buffer("out", "__global double *"),
    real_arg("scale")))


def test_kernels_reused_release_the_buffers_at_the_end(queue):
    """When the block ends, the kept kernels' buffer arguments are NULL (an
    implementation may hold what an argument names), their scalars kept."""
    program = cl.Program(queue.context, NULL_SOURCE).build()
    mf = cl.mem_flags
    a = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.array([2.5]))
    out = cl.Buffer(queue.context, mf.READ_WRITE, 32)
    with kernels_reused():
        kernel = _NULL_OR_FIRST.kernel(program, a=a, out=out, scale=3.0)
        np.testing.assert_array_equal(_launch_and_read(queue, kernel, out), np.full(4, 7.5))
    later = cl.Buffer(queue.context, mf.READ_WRITE, 32)
    kernel.set_arg(1, later)  # only out: a is NULL now
    np.testing.assert_array_equal(_launch_and_read(queue, kernel, later), -np.ones(4))


def test_kernels_reused_per_thread(queue):
    """Another thread's block gets kernels of its own."""
    import threading

    program = cl.Program(queue.context, SCALE_SOURCE).build()
    out = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 32)
    with kernels_reused():
        mine = _SCALED.kernel(program, out=out, scale=1.0)
    theirs = []

    def other():
        with kernels_reused():
            theirs.append(_SCALED.kernel(program, out=out, scale=1.0))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert theirs[0] is not mine


def test_struct_refuses_padding():
    with pytest.raises(ValueError, match="not packed"):
        c_struct("bad", np.dtype([("a", np.int32), ("b", np.float64)], align=True))


def test_bunch_parlett_template_declares_the_spec_signatures(queue):
    """The template's kernels take exactly the arguments the host binds, and the
    record struct and the state constants come from the Python side."""
    spec = BunchParlettSpec("complex128")
    source = render(spec)
    for sig in spec.signatures.values():
        assert f"void {sig.name}({sig.parameters})" in source
    assert c_struct("cjac_bp_max", _RECORD_DTYPE) in source
    assert "#define CJAC_BP_TESTING 6" in source and "#define CJAC_BP_TICKET 8" in source
    fence = 'asm volatile("membar.gl;"'
    assert fence in render(BunchParlettSpec("float64", "ptx")) and fence not in source
    with pytest.raises(ValueError, match="global_fence"):
        BunchParlettSpec("float64", "fence")
    program = build_program(queue.context, queue.device, spec)
    for sig in spec.signatures.values():
        assert cl.Kernel(program, sig.name).num_args == len(sig.args)


def test_struct_aligned_tail_padding():
    """With `aligned`, the tail padding of an aligned C struct is the dtype's."""
    record = np.dtype({"names": ["d", "rho", "j"], "formats": [np.float32, np.int32, np.int32],
                       "offsets": [0, 4, 8], "itemsize": 16})
    assert c_struct("cjac_probe", record, aligned=16) == (
        "typedef struct __attribute__((aligned(16))) {\n    float d;\n    int rho;\n"
        "    int j;\n} cjac_probe;")
    with pytest.raises(ValueError, match="fields cover 12"):
        c_struct("cjac_probe", record)
    with pytest.raises(ValueError, match="12 aligned to 4"):
        c_struct("cjac_probe", record, aligned=4)


@pytest.mark.parametrize("options", [{}, {"indefinite": True}, {"block_width": 4},
                                     {"prescaled": True, "criterion": "C2"}])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_hz_template_declares_the_spec_signatures(dtype, options, queue):
    """Every specialization of the HZ family declares the arguments the host
    binds, and takes its counter indices from HZ_COUNTERS."""
    spec = HZSpec(dtype, **options)
    source = render(spec)
    for sig in spec.signatures.values():
        assert f"void {sig.name}({sig.parameters})" in source
    for name, index in HZ_COUNTERS.items():
        assert f"#define {name} {index}" in source
    program = build_program(queue.context, queue.device, spec)
    for sig in spec.signatures.values():
        assert cl.Kernel(program, sig.name).num_args == len(sig.args)
    assert ("cjac_hz_block" in spec.signatures) == bool(spec.block_width)


def test_hz_spec_refuses_what_it_cannot_render():
    with pytest.raises(ValueError, match="criterion"):
        HZSpec("float64", criterion="C3")
    with pytest.raises(ValueError, match="indefinite pencil runs pointwise"):
        HZSpec("float64", block_width=8, indefinite=True)
    with pytest.raises(ValueError, match="HZ kernels handle"):
        HZSpec("float32")
