// mpi_tuning: what lockstep asks of Open MPI before MPI_Init, for its gradient all-reduces.
//
// Ring all-reduce for large messages. Open MPI 4.1's default ("fixed") decision for large
// all-reduces on TCP picks pairwise-exchange algorithms (recursive doubling, Rabenseifner,
// reduce + broadcast) that send both directions over one TCP connection per peer pair,
// where the rendezvous handshakes of messages above the 64 KiB eager limit wait behind
// the other direction's data; measured on shaped links (bench/shaped_links.sh,
// docs/scaling.md) they reach about half the line rate, while the ring (each connection
// carries one direction) reaches it:
// 16 MiB at 4 ranks on 1 Gbit/s links, 418 ms default vs 224 ms ring; at 3 ranks 629 vs
// 192 ms. So lockstep hands Open MPI's tuned component a dynamic-rules file: the ring
// (algorithm 4) from a size where each ring step still moves >= 64 KiB (n x 64 KiB, at
// least 256 KiB), Open MPI's own decision below it (small messages are latency-bound).
//
// Applies only to Open MPI, and only when the user set no coll_tuned parameter of their
// own (OMPI_MCA_coll_tuned_*, which mpirun --mca also sets): theirs win. Other coll
// components (HCOLL, UCC) ignore the file. Opt out: OMPI_MCA_coll_tuned_use_dynamic_rules=0.
// The file goes to $TMPDIR (or /tmp); when it cannot be written nothing changes.
#pragma once

#include <string>

namespace lockstep {

// The rules file's text (Open MPI's coll_tuned dynamic-rules format).
std::string ring_allreduce_rules();
// Sets the OMPI_MCA_ variables that load the rules; returns the file used ("" when it
// left Open MPI alone). Call before MPI_Init.
std::string prefer_ring_allreduce();

}  // namespace lockstep
