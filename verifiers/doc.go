// Package verifiers will hold the Verifier interface, a registry keyed by
// V-Triune's verifier name, and rule verifiers for model output (SPEC §7).
//
// Nothing is implemented yet; see the project's issues on rule verifiers
// and on the math answer verifier.
package verifiers
