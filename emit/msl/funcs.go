package msl

import (
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// funcMap is sprig's hermetic text functions minus the ones that are not
// deterministic or not wanted in source output (random numbers, crypto,
// environment, map-order iteration).
func funcMap() template.FuncMap {
	m := sprig.HermeticTxtFuncMap()
	for _, name := range []string{"randInt", "randAlpha", "randAlphaNum", "randAscii", "randNumeric",
		"randBytes", "shuffle", "uuidv4", "genPrivateKey", "derivePassword", "buildCustomCert",
		"genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert",
		"genSignedCertWithKey", "encryptAES", "decryptAES", "bcrypt", "htpasswd", "keys", "values",
		"env", "expandenv", "now", "date", "dateInZone", "date_in_zone", "unixEpoch", "ago",
		"getHostByName"} {
		delete(m, name)
	}
	return m
}
