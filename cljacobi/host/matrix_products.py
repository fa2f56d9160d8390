"""How the blocked Gram and update kernels multiply: FMAs or FP64 tensor cores.

The blocked kernels' two GEMM-like steps (``cjac_block_gram``,
``cjac_block_update`` in ``templates/blocked.cl.mako``) come in two forms of
the same template:

* ``"fma"`` -- the portable kernels (register micro-tiles of fma), for every
  device and block width;
* ``"mma.*"`` -- warps of 32 work-items multiplying 16 x 8 x 4 fragments
  of real matrices (complex data as their real and imaginary parts), for
  block widths that are a multiple of 8, at most 32 (real) or 16 (complex),
  and for 64 (real) and 32 (complex), where the Gram kernel's warps share
  the tiles (:func:`mma_takes`):

  - ``"mma.m16n8k4"``: one ``mma.sync.aligned.m16n8k4.row.col.f64`` per
    product, through inline PTX, on NVIDIA devices of compute capability 9.0
    and later (the FP64 tensor cores of the H100 and H200);
  - ``"mma.m8n8k4"``: two ``m8n8k4`` products, compute capability 8.x (the
    A100's FP64 tensor cores);
  - ``"mma.emulated"``: the same kernels with the product done through local
    memory, on any device.  It is never chosen by default: it exists so that
    the fragment layouts and the data flow of the tensor-core kernels are
    tested on devices without them (the CI's PoCL).

The compute capability comes from the ``cl_nv_device_attribute_query``
extension of NVIDIA's OpenCL.  ``CLJACOBI_MATRIX_PRODUCTS`` (``"auto"``,
the default, or one of :data:`MATRIX_PRODUCTS`) overrides the choice for
every blocked run of the process, for example to compare the two forms on
one device.
"""

from __future__ import annotations

import os

import pyopencl as cl

from ..errors import DeviceCapabilityError

__all__ = [
    "ENV_VAR", "MATRIX_PRODUCTS", "MMA_MAX_REAL_COLUMNS", "MMA_MIN_ROWS", "PTX_FORMS",
    "check_request", "choose_matrix_products", "compute_capability", "mma_real_columns",
    "mma_takes", "mma_teamed", "native_mma",
]

ENV_VAR = "CLJACOBI_MATRIX_PRODUCTS"

MATRIX_PRODUCTS = ("fma", "mma.m16n8k4", "mma.m8n8k4", "mma.emulated")

#: "auto" keeps the fma kernels for factors of fewer rows: there the mma
#: kernels' sums of the warps cost more than their products save (H100, real
#: n = 1024: 0.159 s against 0.148 s; n = 2048: 0.409 s against 0.450 s;
#: bench/results/eig-mma-real-H100-2026-11-25.json).
MMA_MIN_ROWS = 2048

#: The widest Z one warp of the mma Gram kernel keeps in registers (its 20
#: tiles); Z of :data:`MMA_TEAMED_REAL_COLUMNS` splits its tiles among warps.
MMA_MAX_REAL_COLUMNS = 64

#: The one wider Z the mma kernels take (real w = 64, complex w = 32): the
#: Gram kernel's 72 tiles in four teams of warps
#: (:func:`cljacobi.host.blocked.gram_mma_teams`).
MMA_TEAMED_REAL_COLUMNS = 128

#: The compute capability each tensor-core instruction needs.
_NEEDS = {"mma.m16n8k4": (9, 0), "mma.m8n8k4": (8, 0)}

#: The forms written in inline PTX (NVIDIA devices of compute capability 8.0
#: and more, where the kernels may take other PTX instructions too).
PTX_FORMS = tuple(_NEEDS)


def mma_real_columns(block_width: int, complex_: bool) -> int:
    """RK: the real columns the mma kernels multiply for a block pair, 2w
    (real data) or 4w (complex data as real and imaginary parts)."""
    return 2 * block_width * (2 if complex_ else 1)


def mma_takes(block_width: int, complex_: bool) -> bool:
    """Whether the mma kernels take blocks of this width: w a multiple of 8
    (the fragments' column groups lie in one block) and Z at most
    :data:`MMA_MAX_REAL_COLUMNS` wide (w <= 32 real, 16 complex), or exactly
    :data:`MMA_TEAMED_REAL_COLUMNS` (real w = 64, complex w = 32)."""
    columns = mma_real_columns(block_width, complex_)
    return block_width % 8 == 0 and (
        columns <= MMA_MAX_REAL_COLUMNS or columns == MMA_TEAMED_REAL_COLUMNS)


def mma_teamed(block_width: int, complex_: bool) -> bool:
    """Whether the mma Gram kernel splits its tiles among warps: Z of
    :data:`MMA_TEAMED_REAL_COLUMNS` real columns
    (:func:`cljacobi.host.blocked.gram_mma_teams`)."""
    return mma_real_columns(block_width, complex_) == MMA_TEAMED_REAL_COLUMNS


def check_request(requested: str | None, source: str = "matrix_products") -> None:
    """ValueError unless `requested` is None, ``"auto"`` or one of
    :data:`MATRIX_PRODUCTS` (`source` names it in the message)."""
    if requested is not None and requested != "auto" and requested not in MATRIX_PRODUCTS:
        raise ValueError(f"{source} must be 'auto' or one of {MATRIX_PRODUCTS}, "
                         f"not {requested!r}")


def compute_capability(device: cl.Device) -> tuple[int, int] | None:
    """(major, minor) of an NVIDIA device (``cl_nv_device_attribute_query``),
    None for other devices."""
    try:
        if "cl_nv_device_attribute_query" not in device.extensions.split():
            return None
        return (int(device.compute_capability_major_nv),
                int(device.compute_capability_minor_nv))
    except (cl.Error, AttributeError):  # an ICD that lists the extension but fails it
        return None


def native_mma(device: cl.Device) -> str | None:
    """The FP64 tensor-core form the device has, or None."""
    capability = compute_capability(device)
    if capability is None:
        return None
    for name, needs in _NEEDS.items():
        if capability >= needs:
            return name
    return None


def choose_matrix_products(device: cl.Device, *, complex_: bool, block_width: int,
                           requested: str | None = None, rows: int | None = None) -> str:
    """The form of the blocked Gram and update kernels for a run.

    Parameters
    ----------
    device : pyopencl.Device
    complex_ : bool
        Complex Hermitian data (multiplied as real and imaginary parts).
    block_width : int
        Block width w; the tensor-core forms need w a multiple of 8, at most
        32 for real and 16 for complex data, or 64 (real) and 32 (complex)
        (:func:`mma_takes`).
    requested : str, optional
        ``"auto"`` or one of :data:`MATRIX_PRODUCTS`; default the
        ``CLJACOBI_MATRIX_PRODUCTS`` environment variable, else ``"auto"``:
        the device's tensor cores (:func:`native_mma`) where the width
        allows and the factor has at least :data:`MMA_MIN_ROWS` rows, else
        ``"fma"``.
    rows : int, optional
        Rows of the factor ("auto"; None: any).

    Returns
    -------
    str
        One of :data:`MATRIX_PRODUCTS`.

    Raises
    ------
    ValueError
        An unknown form, or a tensor-core form for a width it does not take.
    DeviceCapabilityError
        A tensor-core instruction the device does not have.
    """
    source = "matrix_products"
    if requested is None:
        requested = os.environ.get(ENV_VAR, "").strip() or "auto"
        source = ENV_VAR
    check_request(requested, source)
    fits = mma_takes(block_width, complex_)
    if requested == "auto":
        native = native_mma(device)
        enough = rows is None or rows >= MMA_MIN_ROWS
        return native if native is not None and fits and enough else "fma"
    if requested != "fma" and not fits:
        raise ValueError(
            f"{source}={requested!r} needs a block width that is a multiple of 8, at most "
            f"{16 if complex_ else 32} (or {32 if complex_ else 64}) for "
            f"{'complex' if complex_ else 'real'} data, not block_width={block_width}; "
            "'fma' runs every width")
    if requested in _NEEDS:
        capability = compute_capability(device)
        if capability is None or capability < _NEEDS[requested]:
            have = ("no NVIDIA compute capability" if capability is None
                    else f"compute capability {capability[0]}.{capability[1]}")
            needs = ".".join(map(str, _NEEDS[requested]))
            raise DeviceCapabilityError(
                f"{source}={requested!r} needs an NVIDIA device of compute capability "
                f"{needs} or later; device {device.name.strip()!r} has {have}")
    return requested
