package spec

import _ "embed"

// Schema is the draft-07 JSON Schema of spec files, for editors
// (yaml-language-server) and `kgen schema`. Tests check it against every
// spec in the repository.
//
//go:embed schema.json
var Schema []byte
