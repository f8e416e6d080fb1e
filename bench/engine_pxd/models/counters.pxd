# Round 33's prototype (bench/engine_compiled.py --prototype): CounterDeltas' fields as C struct
# members.  Cython's pure-Python mode reads this file beside models/counters.py when it
# compiles it; Python never reads it, and counters.py stays the one source.  Not built by
# faultline: BENCHMARKS "fast33, round 33".
cdef class CounterDeltas:
    cdef public list _last
    cdef public double _last_ts
    cdef public object resets, blanks, implausible
