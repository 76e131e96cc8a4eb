//go:build !(linux && (amd64 || arm64))

package cli

// cudaDriverNote: kgenrt's CUDA port runs on linux/amd64 and linux/arm64 only.
func cudaDriverNote() string {
	return "kgenrt's CUDA port runs on linux/amd64 and linux/arm64 only"
}
