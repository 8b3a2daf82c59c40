// Package gae will hold advantage estimation for token sequences (SPEC §3):
// token-level GAE with general masks (verl semantics), Bi-Level GAE (VAGEN,
// seed 004 §5.2, Alg. 2) with the official code's turn-level and
// token-level recursions, turn-level GAE, returns and masked whitening.
//
// Nothing is implemented yet; see the project's issue on advantage
// estimation.
package gae
