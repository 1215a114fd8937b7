// lmu_scan: the LMU's recurrence over all time steps (lmu.cpp) as one autograd node.
//
// The cell's three updates are linear up to the tanh, so lmu.cpp folds them into one state
// s_t = [h_t | m_t] (H hidden units, then the O memory coefficients) and one matrix W:
//   z_t = c_t + s_{t-1} W,   h_t = tanh(z_t[:H]),   m_t = z_t[H:],   s_{-1} = 0,
// with c_t the input's terms of step t, computed for all steps at once. A time step is then
// one matrix product and one tanh, forward and backward, where autograd over the cell as
// written runs 35 operators per step (docs/sequences.md; each a kernel launch on a GPU)
// and, through indexing c_t out of all steps, a backward whose cost grows with the square
// of the length. W's gradient, summed over the steps, is one matrix product at the
// end: sum_t s_{t-1}^T dz_t.
//
// Computed in C's dtype (lmu.cpp gives float32, under autocast too: the memory is a
// near-identity map iterated over hundreds of steps, not a place for 16-bit rounding).
// No second derivative (refused with a message naming the model).
#pragma once

#include <ATen/core/Tensor.h>

namespace lockstep {

// Every step's state S [L, N, H+O] of the recurrence above, for C [L, N, H+O] and W
// [H+O, H+O] of one dtype and device; HIDDEN = H. Differentiable in C and W.
at::Tensor lmu_scan(const at::Tensor& c, const at::Tensor& w, int64_t hidden);

}  // namespace lockstep
