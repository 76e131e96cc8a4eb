package cli

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/verify"
)

// JUnit XML, as CI systems read it (Jenkins, GitLab, Azure): one test suite,
// one failing test case per finding (named by rule id and position), and
// one passing case per check that ran without findings, so a green run
// still shows what was checked.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr,omitempty"`
	Cases    []junitCase `xml:"testcase"`
	Out      string      `xml:"system-out"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitFailure `xml:"failure"`
	Skipped   *junitSkipped `xml:"skipped"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func printJUnit(o *options, rep *verify.Report, diffs bool) error {
	s := junitSuite{Name: "kgen verify", Out: rep.Summary()}
	failing := map[string]bool{}
	for _, f := range rep.Findings {
		failing[f.Check] = true
		for _, ff := range f.Folded {
			failing[ff.Check] = true
		}
		text := f.Check + ": " + withFolded(f)
		if diffs && f.Diff != "" {
			text += "\n" + f.Diff
		}
		s.Cases = append(s.Cases, junitCase{
			Name: fmt.Sprintf("%s %s", f.RuleID(), f.Pos), Classname: "kgen." + f.Check, File: f.Pos.Path, Line: f.Pos.Line,
			Failure: &junitFailure{Message: f.Msg, Type: f.RuleID(), Text: text},
		})
	}
	for _, c := range rep.Checks {
		if !failing[c] {
			s.Cases = append(s.Cases, junitCase{Name: c, Classname: "kgen." + c})
		}
	}
	for _, w := range rep.Warnings { // a check that did not run: a skipped case, not a pass
		s.Cases = append(s.Cases, junitCase{Name: strings.SplitN(w, ":", 2)[0], Classname: "kgen.parity", Skipped: &junitSkipped{Message: w}})
	}
	for _, p := range rep.Parity {
		c := junitCase{Name: "parity " + strings.SplitN(p.String(), ":", 2)[0], Classname: "kgen.parity"}
		if !p.OK() {
			c.Failure = &junitFailure{Message: p.String(), Type: "parity/mismatch"}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	for _, c := range s.Cases {
		if c.Failure != nil {
			s.Failures++
		}
		if c.Skipped != nil {
			s.Skipped++
		}
	}
	fmt.Fprint(o.stdout, xml.Header)
	enc := xml.NewEncoder(o.stdout)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	fmt.Fprintln(o.stdout)
	return nil
}
