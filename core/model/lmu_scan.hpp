// lmu_scan: the LMU's recurrence over all time steps (lmu.cpp) as one autograd node.
//
// The cell's three updates are linear up to the tanh, so lmu_fold folds them into one state
// s_t = [h_t | m_t] (H hidden units, then the O memory coefficients) and one matrix W:
//   z_t = c_t + s_{t-1} W,   h_t = tanh(z_t[:H]),   m_t = z_t[H:],   s_{-1} = 0,
// with c_t the input's terms of step t, computed for all steps at once. A time step is then
// one matrix product and one tanh, forward and backward, where autograd over the cell as
// written runs 35 operators per step (docs/sequences.md; each a kernel launch on a GPU)
// and, through indexing c_t out of all steps, a backward whose cost grows with the square
// of the length. W's gradient, summed over the steps, is one matrix product at the
// end: sum_t s_{t-1}^T dz_t.
//
// lmu_fold forms C and W in float32 with autocast off, so under --amp the recurrence is
// iterated in float32 (the cell as written, under autocast, rounds its memory to 16 bits at
// every step); only the input terms (e_x, W_x) and the classifier run in 16 bits. No second
// derivative (refused with a message naming the model).
#pragma once

#include <ATen/core/Tensor.h>

namespace lockstep {

// The cell's parameters and buffers, by lmu.cpp's names: e_h [1, H], e_m [1, O], w_h [H, H],
// w_m [H, O], abar_t [O, O] (Abar transposed), bbar [1, O].
struct LmuCell {
  at::Tensor e_h, e_m, w_h, w_m, abar_t, bbar;
};

// lmu_scan's inputs for CELL, given the input's terms of every step UX = e_x x [L, N, 1] and
// HX = W_x x + b [L, N, H]. With s = [h | m] and E = [e_h | e_m]^T the cell is
//   m_t = s_{t-1} P + ux_t Bbar                      P = E Bbar + [0; Abar^T]
//   h_t = tanh(s_{t-1} Q + hx_t + ux_t Bbar W_m^T)   Q = P W_m^T + [W_h^T; 0]
// so W = [Q | P] and C_t = [hx_t + ux_t Bbar W_m^T | ux_t Bbar]. In float32 (float64 for
// float64 parameters) whatever autocast would pick; differentiable in every input.
struct LmuFold {
  at::Tensor c, w;
};
LmuFold lmu_fold(const LmuCell& cell, const at::Tensor& ux, const at::Tensor& hx);

// Every step's state S [L, N, H+O] of the recurrence above, for C [L, N, H+O] and W
// [H+O, H+O] of one dtype and device; HIDDEN = H. Differentiable in C and W.
at::Tensor lmu_scan(const at::Tensor& c, const at::Tensor& w, int64_t hidden);

}  // namespace lockstep
