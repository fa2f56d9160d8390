"""The PyOpenCL side of cljacobi: device choice, program building, sweep drivers.

Arrows point one way: the public API in :mod:`cljacobi` calls into this
package, which renders and launches the kernels in ``cljacobi/templates``.
"""
