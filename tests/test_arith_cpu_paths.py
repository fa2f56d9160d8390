"""The CPU paths of ``templates/arith.cl.mako`` against numpy, kernel by kernel.

``math="inline"`` (clang's builtins and ``cjac_hypot`` in one FMA) and the
explicit row vectors (``row_vectors``) are what the batched kernel runs on
CPUs (cljacobi.host.batched.math_for, row_vector_for); they are checked
here on whatever device the suite runs on, both maths each time:

- ``cjac_hypot`` against the exact value (long double) over the whole double
  range, zeros, subnormals, infinities and NaN included: within 1.25 ulp
  where the inline one squares, within OpenCL's 4 ulp elsewhere;
- every row-vector operation rounds each element exactly as its
  ``cjac_elem`` counterpart (bit for bit), the sums agree with numpy to
  rounding, and the vectors' sums add their lanes in the documented tree.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from mako.template import Template

from cljacobi.host.programs import _lookup

EPS = np.finfo(np.float64).eps

SOURCE = """\
<%namespace name="arith" file="arith.cl.mako"/>
${arith.prelude("double", math)}
${arith.element("double", complex_, "interleaved", with_workgroup_sum=False, math=math)}
${arith.row_vectors("double", complex_, elements, "__global", math)}

__kernel void hypots(__global const double *x, __global const double *y,
                     __global double *out)
{
    const int i = get_global_id(0);
    out[i] = cjac_hypot(x[i], y[i]);
}

/* One work-item per column pair (x, y) of m rows, as a pair step does: the
 * dot product, the norms and the rotation, by row vectors and the rest of
 * the rows one by one, beside the same operations by elements. */
__kernel void rows(__global cjac_elem *x, __global cjac_elem *y,
                   __global cjac_elem *xe, __global cjac_elem *ye, const int m,
                   const cjac_elem s, const cjac_real cm1,
                   __global cjac_elem *dots, __global cjac_real *norms)
{
    const int pair = get_global_id(0);
    __global cjac_elem *gi = x + pair * m, *gj = y + pair * m;
    __global cjac_elem *ei = xe + pair * m, *ej = ye + pair * m;
    const int vector_end = m - m % CJAC_ROWS;
    cjac_rows dot = CJAC_ROWS_ZERO, norm_i = CJAC_ROWS_ZERO;
    for (int row = 0; row < vector_end; row += CJAC_ROWS) {
        __global cjac_real *pi = (__global cjac_real *)(gi + row);
        __global cjac_real *pj = (__global cjac_real *)(gj + row);
        const cjac_rows a = CJAC_ROWS_LOAD(pi), b = CJAC_ROWS_LOAD(pj);
        dot = cjac_rows_dot_acc(a, b, dot);
        const cjac_rows an = cjac_rows_scale_1p(cm1, cjac_rows_axpy(cjac_conj(s), b, a));
        const cjac_rows bn = cjac_rows_scale_1p(cm1, cjac_rows_axpy(s, a, b));
        norm_i = cjac_rows_abs2_acc(an, norm_i);
        CJAC_ROWS_STORE(pi, an);
        CJAC_ROWS_STORE(pj, bn);
    }
    cjac_elem dot_sum = cjac_rows_sum_elem(dot);
    cjac_real norm_sum = cjac_rows_sum_real(norm_i);
    for (int row = vector_end; row < m; ++row) {
        const cjac_elem a = gi[row], b = gj[row];
        dot_sum = cjac_dot_acc(a, b, dot_sum);
        gi[row] = cjac_scale_1p(cm1, cjac_axpy(cjac_conj(s), b, a));
        gj[row] = cjac_scale_1p(cm1, cjac_axpy(s, a, b));
        norm_sum = cjac_abs2_acc(gi[row], norm_sum);
    }
    for (int row = 0; row < m; ++row) {
        const cjac_elem a = ei[row], b = ej[row];
        ei[row] = cjac_scale_1p(cm1, cjac_axpy(cjac_conj(s), b, a));
        ej[row] = cjac_scale_1p(cm1, cjac_axpy(s, a, b));
    }
    dots[pair] = dot_sum;
    norms[pair] = norm_sum;
}
"""


def _program(context, math, complex_, elements):
    source = Template(SOURCE, lookup=_lookup(), strict_undefined=True).render(
        math=math, complex_=complex_, elements=elements)
    return cl.Program(context, source).build()


MATHS = ("library", "inline")


@pytest.mark.parametrize("math", MATHS)
def test_hypot_within_its_bounds_everywhere(math, queue, rng):
    exponents = rng.uniform(-1074, 1024, size=(2, 4000))
    x = np.ldexp(rng.uniform(0.5, 1, size=(2, 4000)), exponents.astype(int))
    x *= rng.choice([-1.0, 1.0], size=x.shape)
    with np.errstate(over="ignore"):  # close magnitudes
        near = np.ldexp(x[0, :1000], rng.integers(-60, 60, 1000))
    near[~np.isfinite(near)] = 1.0
    special = np.array([0.0, -0.0, 5e-324, 2.2e-308, 1e-300, 2.0 ** -460, 2.0 ** 500,
                        1.7e308, np.inf, -np.inf, np.nan, 3.0, 4.0])
    a = np.concatenate([x[0], x[0, :1000], np.repeat(special, special.size)])
    b = np.concatenate([x[1], near, np.tile(special, special.size)])
    out = cl_array.empty(queue, a.shape, np.float64)
    _program(queue.context, math, True, 2).hypots(
        queue, a.shape, None, cl_array.to_device(queue, a).data,
        cl_array.to_device(queue, b).data, out.data)
    with np.errstate(over="ignore"):
        want = np.hypot(a, b)
        exact = np.hypot(a.astype(np.longdouble), b.astype(np.longdouble))
    got = out.get()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    ulps = (np.abs(got[finite] - exact[finite])
            / np.spacing(np.maximum(want[finite], 5e-324)).astype(np.longdouble))
    assert ulps.max() <= 4  # OpenCL's bound for hypot
    if math == "inline":  # where it squares: 0.75 ulp from the square and the FMA,
        big = np.maximum(np.abs(a), np.abs(b))[finite]  # 0.5 from the root
        squares = (big <= 2.0 ** 500) & ((big >= 2.0 ** -460) | (big == 0))
        assert ulps[squares].max() <= 1.25
    assert (got[(a == 0) & (b == 0)] == 0).all()


@pytest.mark.parametrize("math", MATHS)
@pytest.mark.parametrize(("complex_", "elements"),
                         [(False, 2), (False, 4), (False, 8), (False, 16),
                          (True, 2), (True, 4), (True, 8)])
def test_row_vectors_round_as_the_elements(math, complex_, elements, queue, rng):
    """A rotation by row vectors gives the elements' bits; the dot product and
    the norm agree with numpy to rounding, over whole vectors and tails."""
    pairs = 6
    dtype = np.complex128 if complex_ else np.float64
    rows = cl.Kernel(_program(queue.context, math, complex_, elements), "rows")
    for m in (1, elements - 1, elements, 3 * elements + 1, 37):
        if m < 1:
            continue
        x = rng.standard_normal((pairs, m))
        y = rng.standard_normal((pairs, m))
        if complex_:
            x = x + 1j * rng.standard_normal((pairs, m))
            y = y + 1j * rng.standard_normal((pairs, m))
        s = (0.3 - 0.4j) if complex_ else 0.3
        cm1 = 1 / np.sqrt(1 + abs(s) ** 2) - 1
        d_x, d_y = cl_array.to_device(queue, x), cl_array.to_device(queue, y)
        e_x, e_y = cl_array.to_device(queue, x), cl_array.to_device(queue, y)
        dots = cl_array.empty(queue, pairs, dtype)
        norms = cl_array.empty(queue, pairs, np.float64)
        rows(queue, (pairs,), None, d_x.data, d_y.data, e_x.data, e_y.data,
                     np.int32(m), np.array(s, dtype), np.float64(cm1), dots.data, norms.data)
        np.testing.assert_array_equal(d_x.get(), e_x.get())
        np.testing.assert_array_equal(d_y.get(), e_y.get())
        new_x = x + np.conj(s) * y
        new_x = new_x + cm1 * new_x
        scale = np.abs(x).max() * np.abs(y).max() * m
        assert np.abs(dots.get() - np.sum(np.conj(x) * y, axis=1)).max() <= 4 * m * EPS * scale
        assert np.allclose(d_x.get(), new_x, rtol=8 * EPS, atol=8 * EPS * np.abs(new_x).max())
        want = np.sum(np.abs(d_x.get()) ** 2, axis=1)
        assert np.abs(norms.get() - want).max() <= 4 * m * EPS * want.max()


def test_row_vectors_need_an_opencl_vector():
    with pytest.raises(Exception, match="make no OpenCL vector"):
        Template(SOURCE, lookup=_lookup()).render(math="library", complex_=True, elements=16)
