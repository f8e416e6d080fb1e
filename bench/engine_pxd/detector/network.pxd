# Round 33's prototype (bench/engine_compiled.py --prototype): a NIC port's and a node's fields
# as C struct members, NodeNics.quiet a C method with typed locals.  Cython's pure-Python mode
# reads this file beside detector/network.py when it compiles it; Python never reads it, and
# network.py stays the one source.  Not built by faultline: BENCHMARKS "fast33, round 33".
# Fields holding None, ints of any size, sets, lists or names stay objects; the floats the
# quiet path reads and writes are doubles.  tests/test_fast33.py holds the names here equal
# to the classes' __slots__.
cimport cython
from models.counters cimport CounterDeltas

cdef class _Port:
    cdef public object scope
    cdef public CounterDeltas counters
    cdef public object errors, flaps, gbps, active, usual_errors, name, family, cnp_run
    cdef public double last_ts, low_onset, last_error_ts, err_onset, last_flap_ts, interval_s
    cdef public double peer, odd_error_ts, held_ts, learn_ts, idle_ts, rate, rate_ts
    cdef public double rate_since, held, told_s, told_lo, told_hi, wait_mean, cnp_mean
    cdef public double cong_ts, np_s, rp_s, own_gbps, sank_ts
    cdef public bint down, busy, sinking
    cdef public object low, ok, vote, role, rate_low, cong_n

cdef class NodeNics:
    cdef public object node
    cdef public dict _ports
    cdef public double _ref_gbps, _ref_ts, _top, _told_s
    cdef public object _names, _paced, _retrained, _downs, _retrains

    @cython.locals(p=_Port, counters=CounterDeltas, ts=cython.double, prev_ts=cython.double,
                   dt=cython.double, cap=cython.double, wait=cython.double, gbps=cython.double,
                   ref=cython.double, n=cython.long)
    cpdef bint quiet(self, s, cfg)
