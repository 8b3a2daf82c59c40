// Package cuda will hold GPU kernels for the hot loss and advantage paths,
// built only with the cuda build tag (DESIGN.md, "CUDA").
//
// Nothing is implemented yet; see the project's issue on CUDA kernels.
package cuda
