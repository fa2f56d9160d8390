import cProfile, pstats, sys
import numpy as np
sys.path.insert(0, "bench")
from bench_gsvd import paper_pair
import cljacobi
n = int(sys.argv[1]); dtype = sys.argv[2] if len(sys.argv) > 2 else "float64"
A, B, _ = paper_pair(n, dtype, np.random.default_rng(0))
cljacobi.gsvd(A[:512, :512], B[:512, :512])
pr = cProfile.Profile(); pr.enable()
r, info = cljacobi.gsvd(A, B, return_info=True)
pr.disable()
print(info.seconds)
pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
