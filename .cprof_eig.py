import cProfile, pstats, sys, time
import numpy as np
import cljacobi
from cljacobi.matrices import paper_spectrum, with_spectrum
rng = np.random.default_rng(0)
n = int(sys.argv[1])
lam = paper_spectrum(n, rng=rng); M = with_spectrum(lam, rng=rng)
cljacobi.eig_indefinite(M, variant="auto")
pr = cProfile.Profile(); s=time.perf_counter()
pr.enable(); cljacobi.eig_indefinite(M, variant="auto"); pr.disable()
print("wall", time.perf_counter()-s)
pstats.Stats(pr).sort_stats("cumulative").print_stats(45)
