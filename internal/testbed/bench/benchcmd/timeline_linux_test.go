package benchcmd

import (
	"testing"
	"time"
)

func TestSummarizeTimeline(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name  string
		steps map[string]map[string]time.Duration
		want  string
	}{
		{"nothing seen", nil, "no enactment seen"},
		{"two waves", map[string]map[string]time.Duration{
			"a.p": {stepCreated: ms(100), stepPending: ms(200), stepPermit: ms(300), stepProgressing: ms(400), stepAvailable: ms(1300)},
			"b.p": {stepCreated: ms(150), stepPending: ms(250), stepPermit: ms(1400), stepProgressing: ms(1500), stepAvailable: ms(3400)},
			"c.p": {stepCreated: ms(120), stepPending: ms(220), stepPermit: ms(1350), stepProgressing: ms(1500), stepAvailable: ms(2850)},
		}, "3 enactments: created by 0.15s, Pending by 0.25s, permits 0.30s-1.40s, Available 1.30s-3.40s; permit→Available median 1.50s, max 2.00s (b.p)"},
		{"none Available yet", map[string]map[string]time.Duration{
			"a.p": {stepCreated: ms(100), stepPending: ms(200)},
		}, "1 enactments: created by 0.10s, Pending by 0.20s, permits 0.00s-0.00s, Available 0.00s-0.00s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarizeTimeline(tt.steps); got != tt.want {
				t.Errorf("summarizeTimeline:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
