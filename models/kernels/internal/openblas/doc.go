// Package openblas calls OpenBLAS's cblas_sgemm through cgo, for the
// kernels package's `-tags openblas` build (without that tag, or without
// cgo, the package is empty and nothing links OpenBLAS). It is a package of
// its own because Go does not build assembly files in a package that uses
// cgo: kept apart, the kernels package keeps its AVX2 kernels in that build.
package openblas
