// Package rewards will hold reward components and their composition
// (AVATAR Table 1), sample-level routing (V-Triune §3.1), the Judge
// interface and source-level diagnostics (SPEC §7).
//
// Nothing is implemented yet; see the project's issue on rule verifiers
// and reward composition.
package rewards
