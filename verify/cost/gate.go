package cost

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Margin is how much any count may grow over the record before the gate
// fails: 2%. The counts are exact and deterministic, so any growth is a
// real change; the margin lets a deliberate small trade (a few more
// argument reads for a fused epilogue) through, while a lost vector width
// (4× the loads), a dropped tile reuse or an extra barrier per row fails.
const Margin = 0.02

// Record is the gate's file: every built-in kernel × dtype's counts at its
// cost shape, by host name.
type Record struct {
	Note    string                 `json:"note"`
	Kernels map[string]RecordEntry `json:"kernels"`
}

// RecordEntry is one kernel × dtype's recorded counts; a count of zero is
// left out (and read back as zero), so that the file lists what a kernel
// does and a new kind of work shows up in its diff as an added line.
type RecordEntry struct {
	Shape  string            `json:"shape"`
	Counts map[string]uint64 `json:"counts"`
}

// RecordNote heads the record file.
const RecordNote = "cost counts of every built-in kernel × dtype at its cost shape (verify/cost); " +
	"a count above its record by more than 2% fails go test ./verify/cost; " +
	"after a deliberate change: go test ./verify/cost -run TestCostGate -update"

// NewRecord records reports.
func NewRecord(reports []*Report) Record {
	rec := Record{Note: RecordNote, Kernels: map[string]RecordEntry{}}
	for _, r := range reports {
		counts := map[string]uint64{}
		for _, m := range Metrics(&r.Cost) {
			if m.Value != 0 {
				counts[m.Name] = m.Value
			}
		}
		rec.Kernels[r.HostName] = RecordEntry{Shape: r.Shape, Counts: counts}
	}
	return rec
}

// Marshal is the record's file text: indented, keys sorted, so that a diff
// of the file shows exactly the counts that changed.
func (rec Record) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(rec, "", "  ")
	return append(b, '\n'), err
}

// Compare holds reports to rec: it returns one line per count that grew by
// more than Margin, per kernel × dtype missing from the record or from the
// reports, and per changed shape; and, separately, the counts that fell
// (the record is then out of date, which is not a failure).
func Compare(rec Record, reports []*Report) (regressions, improvements []string) {
	seen := map[string]bool{}
	for _, r := range reports {
		seen[r.HostName] = true
		old, ok := rec.Kernels[r.HostName]
		if !ok {
			regressions = append(regressions, fmt.Sprintf("%s: not in the record (a new kernel × dtype: record it with -update)", r.HostName))
			continue
		}
		if old.Shape != r.Shape {
			regressions = append(regressions, fmt.Sprintf("%s: recorded at %s, measured at %s", r.HostName, old.Shape, r.Shape))
			continue
		}
		for _, m := range Metrics(&r.Cost) {
			was := old.Counts[m.Name]
			switch {
			case float64(m.Value) > float64(was)*(1+Margin):
				regressions = append(regressions, fmt.Sprintf("%s: %s rose from %d to %d (%s) at %s, over the %.0f%% margin",
					r.HostName, m.Name, was, m.Value, growth(was, m.Value), r.Shape, Margin*100))
			case m.Value < was:
				improvements = append(improvements, fmt.Sprintf("%s: %s fell from %d to %d", r.HostName, m.Name, was, m.Value))
			}
		}
	}
	var gone []string
	for host := range rec.Kernels {
		if !seen[host] {
			gone = append(gone, fmt.Sprintf("%s: recorded but not measured (removed? update the record with -update)", host))
		}
	}
	sort.Strings(gone)
	return append(regressions, gone...), improvements
}

func growth(was, now uint64) string {
	if was == 0 {
		return "from zero"
	}
	return fmt.Sprintf("+%.1f%%", (float64(now)/float64(was)-1)*100)
}

// LoadRecord reads a record file.
func LoadRecord(path string) (Record, error) {
	var rec Record
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("%s: %v", path, err)
	}
	return rec, nil
}
