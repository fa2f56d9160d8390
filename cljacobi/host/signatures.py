"""Kernel arguments declared once, for the template and for the host.

A :class:`KernelSignature` lists a kernel's arguments by name and OpenCL C
type.  The template renders its parameter list from it
(``void cjac_bp_step(${signatures["cjac_bp_step"].parameters})``) and the
host binds values to it by name (:meth:`KernelSignature.bind`), so the
positions are never counted by hand on either side.  Arguments that only some
specializations have are left out of the tuple by the plain Python that
builds it.

Constants and structs that Python and OpenCL share are rendered from the
Python side too: :func:`c_defines` turns a mapping into ``#define`` lines,
:func:`c_struct` a numpy structured dtype into a ``typedef struct``.

Kernel objects are made by :meth:`KernelSignature.kernel`.  Making one costs
about 0.1 ms of host time (117 us on the H200's host) while the device waits
for the run it sets up, and a solve on the device makes 13 to 20 of them.
Within :func:`kernels_reused` (the pipeline's block around one matrix) a
thread keeps its kernel objects and hands them out again, in the order they
are asked for, to the next block: the i-th kernel of a program's kernel
`name` asked for in a block is the i-th of the block before, its arguments
all bound again, so that two kernels of one block are never the same
object.  Launches already enqueued keep the arguments they were enqueued
with (OpenCL captures them), so the results are the same.  When the block
ends, the kept kernels' buffer arguments are set to NULL, so that none of
them holds the device memory of a finished solve.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pyopencl as cl

from .launch import set_scalar_arg

__all__ = ["Arg", "KernelSignature", "buffer", "c_defines", "c_struct", "int_arg",
           "kernels_reused", "long_arg", "real_arg"]

#: How a scalar argument's value is converted before it is set.
_SCALARS = {"int": np.int32, "long": np.int64, "real": None}  # real: the signature's real type


@dataclass(frozen=True)
class Arg:
    """One kernel argument: its name, its OpenCL C declaration type and its kind
    (``"buffer"``, or the scalar kinds ``"int"`` and ``"real"``)."""

    name: str
    ctype: str
    kind: str

    @property
    def declaration(self) -> str:
        pointer = self.ctype.endswith("*")
        return f"{self.ctype}{'' if pointer else ' '}{self.name}"


def buffer(name: str, ctype: str) -> Arg:
    """A ``__global`` buffer argument, `ctype` e.g. ``"__global const cjac_real *"``."""
    return Arg(name, ctype, "buffer")


def int_arg(name: str) -> Arg:
    """A ``const int`` scalar argument."""
    return Arg(name, "const int", "int")


def long_arg(name: str) -> Arg:
    """A ``const long`` scalar argument (64-bit element offsets and strides)."""
    return Arg(name, "const long", "long")


def real_arg(name: str) -> Arg:
    """A ``const cjac_real`` scalar argument (the family's real type)."""
    return Arg(name, "const cjac_real", "real")


_FLOAT64 = np.dtype(np.float64)


class _Kept(NamedTuple):
    """A kept kernel object, its program (held, so that no other program
    takes its id) and the positions of its buffer arguments."""

    program: cl.Program
    kernel: cl.Kernel
    buffers: tuple[int, ...]


@dataclass
class _KernelReuse:
    """One thread's kept kernel objects: for each (program, name), the kernels
    in the order a block asked for them; how many of each the current block
    has handed out; and how deep the blocks are nested."""

    kept: dict[tuple[int, str], list[_Kept]] = dataclasses.field(default_factory=dict)
    handed: dict[tuple[int, str], int] = dataclasses.field(default_factory=dict)
    depth: int = 0


_reuse = threading.local()


def _thread_reuse() -> _KernelReuse:
    reuse = getattr(_reuse, "state", None)
    if reuse is None:
        reuse = _reuse.state = _KernelReuse()
    return reuse


@contextmanager
def kernels_reused() -> Iterator[None]:
    """Within this block this thread's kernel objects are kept and handed out
    again to the next block (module docstring); nested blocks are one.

    When the outermost block ends, the buffer arguments of the kernels it
    handed out are set to NULL: an OpenCL implementation may hold the buffer
    an argument names until the argument is set again, and a kept kernel
    must not hold a finished solve's device memory."""
    reuse = _thread_reuse()
    reuse.depth += 1
    try:
        yield
    finally:
        reuse.depth -= 1
        if not reuse.depth:
            for key, count in reuse.handed.items():
                for kept in reuse.kept[key][:count]:
                    for position in kept.buffers:
                        kept.kernel.set_arg(position, None)
            reuse.handed.clear()


def _kernel_object(program: cl.Program, name: str, buffers: tuple[int, ...]) -> cl.Kernel:
    """Kernel `name` of `program`, whose buffer arguments are at `buffers`: a
    new one outside :func:`kernels_reused`, else this thread's next kept one
    (made the first time)."""
    reuse = _thread_reuse()
    if not reuse.depth:
        return cl.Kernel(program, name)
    key = (id(program), name)
    kept = reuse.kept.setdefault(key, [])
    index = reuse.handed.get(key, 0)
    reuse.handed[key] = index + 1
    if index == len(kept):
        kept.append(_Kept(program, cl.Kernel(program, name), buffers))
    return kept[index].kernel


@dataclass(frozen=True)
class KernelSignature:
    """The arguments of one kernel, in order.

    Attributes
    ----------
    name : str
        The kernel's name in the program.
    args : tuple of Arg
        Its arguments in declaration order.
    real_dtype : numpy.dtype
        What ``real`` scalars are converted to (float64 or float32).
    """

    name: str
    args: tuple[Arg, ...]
    real_dtype: np.dtype = _FLOAT64

    def __post_init__(self) -> None:
        names = [arg.name for arg in self.args]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: argument names repeat: {names}")

    @property
    def parameters(self) -> str:
        """The parameter list as the template declares it."""
        return ",\n    ".join(arg.declaration for arg in self.args)

    @cached_property
    def _buffer_positions(self) -> tuple[int, ...]:
        return tuple(index for index, arg in enumerate(self.args) if arg.kind == "buffer")

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {arg.name: index for index, arg in enumerate(self.args)}

    def position(self, name: str) -> int:
        """Index of the argument `name`."""
        index = self._positions.get(name)
        if index is None:
            raise KeyError(f"{self.name} has no argument {name!r}; it has "
                           f"{[arg.name for arg in self.args]}")
        return index

    def kernel(self, program: cl.Program, **values: object) -> cl.Kernel:
        """A kernel object of `program` with every argument bound from
        `values`: a new one, or within :func:`kernels_reused` one this thread
        kept (module docstring)."""
        missing = {arg.name for arg in self.args} - values.keys()
        if missing:
            raise TypeError(f"{self.name}: no value for {sorted(missing)}")
        kernel = _kernel_object(program, self.name, self._buffer_positions)
        self.bind(kernel, **values)
        return kernel

    def bind(self, kernel: cl.Kernel, **values: object) -> None:
        """Set the arguments named in `values` (scalars converted to their C
        type and set through the loader, :func:`cljacobi.host.launch.set_scalar_arg`)."""
        for name, value in values.items():
            index = self.position(name)
            kind = self.args[index].kind
            if kind == "buffer":
                kernel.set_arg(index, value)
            else:
                set_scalar_arg(kernel, index, (_SCALARS[kind] or self.real_dtype.type)(value))


def c_defines(constants: Mapping[str, int | float]) -> str:
    """``#define NAME value`` lines for `constants` (rendered into a template)."""
    return "\n".join(f"#define {name} {value!r}" for name, value in constants.items())


#: OpenCL C types of the numpy field types :func:`c_struct` handles.
_FIELD_CTYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float",
                 np.dtype(np.int32): "int", np.dtype(np.uint32): "uint"}


def c_struct(name: str, dtype: np.dtype, *, aligned: int | None = None) -> str:
    """``typedef struct {...} name;`` with the fields of the structured `dtype`.

    The numpy dtype is what the host reads the records with; rendering the C
    struct from it keeps the two layouts the same.  Fields are laid out in
    order; the dtype must have no implicit padding (its item size is the sum
    of its fields', each field aligned to its own size), except, with
    `aligned`, the tail padding up to a multiple of `aligned` bytes that
    ``__attribute__((aligned(aligned)))`` gives the C struct.
    """
    fields = []
    offset = 0
    for field in dtype.names:
        field_dtype, field_offset = dtype.fields[field][:2]
        if field_offset != offset or offset % field_dtype.itemsize:
            raise ValueError(f"{name}: field {field!r} is not packed at offset {offset}")
        fields.append(f"    {_FIELD_CTYPES[field_dtype]} {field};")
        offset += field_dtype.itemsize
    size = -(-offset // aligned) * aligned if aligned else offset
    if size != dtype.itemsize:
        raise ValueError(f"{name}: {dtype.itemsize} bytes, fields cover {offset}"
                         + (f" ({size} aligned to {aligned})" if aligned else ""))
    attribute = f"__attribute__((aligned({aligned}))) " if aligned else ""
    return f"typedef struct {attribute}{{\n" + "\n".join(fields) + f"\n}} {name};"
