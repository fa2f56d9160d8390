"""The rates the distributed sweeps' time model needs, measured on this machine.

    mpiexec -n 2 python bench/transfer_rates.py --megabytes 512 --json results/transfer-DEVICE-DATE.json

Rank 0 times OpenCL copies between host and device (pageable numpy arrays,
as the stripes travel) in both directions; ranks 0 and 1 then time an MPI
send/receive of the same size between host buffers (what a stripe costs
between two ranks of one node).  Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from common import write_results  # noqa: E402


def main(argv=None) -> None:
    import pyopencl as cl
    from mpi4py import MPI

    from cljacobi.distributed import node_rank, rank_queue

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    size = args.megabytes << 20
    host = np.ones(size // 8)
    queue = rank_queue(node_rank(comm))
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size)

    def rate(action) -> float:
        action()
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            action()
            times.append(time.perf_counter() - start)
        return size / statistics.median(times) / 1e9

    records = []
    if rank == 0:
        upload = rate(lambda: (cl.enqueue_copy(queue, buf, host), queue.finish()))
        download = rate(lambda: cl.enqueue_copy(queue, host, buf))
        records += [{"what": "host to device (pageable)", "GB/s": upload},
                    {"what": "device to host (pageable)", "GB/s": download}]
    comm.Barrier()
    if comm.Get_size() > 1 and rank < 2:
        other = 1 - rank

        def exchange():
            comm.Sendrecv(host, dest=other, recvbuf=np.empty_like(host), source=other)

        records.append({"what": "MPI exchange between 2 ranks (each way)",
                        "GB/s": rate(exchange)})
    if rank == 0:
        for record in records:
            print(record, flush=True)
        write_results(args.json, "transfer_rates", queue.device.name.strip(),
                      [{**r, "megabytes": args.megabytes} for r in records])


if __name__ == "__main__":
    main()
