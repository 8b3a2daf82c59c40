// Package appo will hold APPO's attention-guided frame selection and
// perception-token weights (seed 001, Eq. 3–13, as SPEC §6 interprets
// them).
//
// Nothing is implemented yet; see the project's issue on APPO.
package appo
