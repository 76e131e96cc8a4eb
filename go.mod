module github.com/kgen-dev/kgen

go 1.24

require (
	github.com/dave/jennifer v1.7.1
	github.com/ebitengine/purego v0.10.2
	github.com/goccy/go-yaml v1.19.2
	github.com/google/renameio/v2 v2.0.0
	github.com/pmezard/go-difflib v1.0.0
	github.com/rogpeppe/go-internal v1.14.1
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/spf13/cobra v1.10.2
	github.com/x448/float16 v0.8.4
	golang.org/x/mod v0.21.0
	golang.org/x/tools v0.26.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sync v0.8.0 // indirect
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/text v0.17.0 // indirect
)
