// Package tas will hold Temporal Advantage Shaping (AVATAR, seed 000 §4.2,
// Eq. 5–6): per-token weights w_t = 1 + λ·(2t̃ − 1)² over the valid tokens
// of each response, and the ablation's uniform and inverse shapes.
//
// Nothing is implemented yet; see the project's issue on advantage
// estimation.
package tas
