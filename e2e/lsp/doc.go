// Package lsp tests `kgen lsp` with a real editor: Neovim, headless, drives
// the server through diagnostics as the buffer changes, hover, completion
// and formatting. The test skips, saying why, when nvim is not installed
// (Debian and Ubuntu: apt-get install neovim).
package lsp
