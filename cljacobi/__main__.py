"""``python -m cljacobi``: the OpenCL devices and which one cljacobi selects.

``python -m cljacobi --check`` exits with status 1 when no usable device with
double precision is selected, or when the selected one fails to run a probe
kernel in a child process (see :mod:`cljacobi.host.device`).
"""

import sys

from .host.device import main

sys.exit(main())
