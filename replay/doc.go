// Package replay will hold AVATAR's off-policy machinery (seed 000 §4.1,
// §4.4, Algorithm 1): the VCRS tracker, the stratified replay buffer with
// Easy/Medium/Hard tiers, off-policy advantages (Eq. 11), the hybrid
// objective (Eq. 3–4), hint triggering and snapshots.
//
// Nothing is implemented yet; see the project's issue on AVATAR
// off-policy training.
package replay
