package handler

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
)

// row is one line of upstream's enactment condition matrix: the statuses of
// Available, Failing, Progressing, Pending, Aborted, then the reasons in
// the same order, then the messages.
type row struct {
	Status  [5]corev1.ConditionStatus
	Reason  [5]shared.ConditionReason
	Message [5]string
}

func rowOf(l shared.ConditionList) row {
	var r row
	for i, t := range shared.NodeNetworkConfigurationEnactmentConditionTypes {
		c := l.Find(t)
		if c == nil {
			continue
		}
		r.Status[i], r.Reason[i], r.Message[i] = c.Status, c.Reason, c.Message
	}
	return r
}

func TestEnactmentConditionMatrix(t *testing.T) {
	const (
		T = corev1.ConditionTrue
		F = corev1.ConditionFalse
		U = corev1.ConditionUnknown
	)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	wait := "Waiting for progressing nodes to finish"
	retry := retryingMessage("n1.p1", "n1", errors.New("boom"), 2, 5)
	tests := []struct {
		name  string
		set   func(*shared.ConditionList)
		want  row
		phase enactmentPhase
	}{
		{"unknown", func(l *shared.ConditionList) { setEnactmentUnknown(l, now) },
			row{Status: [5]corev1.ConditionStatus{U, U, U, U, U}}, phaseNone},
		{"pending", func(l *shared.ConditionList) { setEnactmentPending(l, now) },
			row{[5]corev1.ConditionStatus{F, F, F, T, F}, [5]shared.ConditionReason{"MaxUnavailableLimitReached", "MaxUnavailableLimitReached", "MaxUnavailableLimitReached", "MaxUnavailableLimitReached", "MaxUnavailableLimitReached"}, [5]string{"", "", wait, wait, ""}}, phasePending},
		{"progressing", func(l *shared.ConditionList) { setEnactmentProgressing(l, now) },
			row{[5]corev1.ConditionStatus{U, U, T, F, F}, [5]shared.ConditionReason{"ConfigurationProgressing", "ConfigurationProgressing", "ConfigurationProgressing", "ConfigurationProgressing", "ConfigurationProgressing"}, [5]string{"", "", "Applying desired state", "", ""}}, phaseProgressing},
		{"success", func(l *shared.ConditionList) { setEnactmentSuccess(l, now, "successfully reconciled") },
			row{[5]corev1.ConditionStatus{T, F, F, F, F}, [5]shared.ConditionReason{"SuccessfullyConfigured", "SuccessfullyConfigured", "SuccessfullyConfigured", "SuccessfullyConfigured", "SuccessfullyConfigured"}, [5]string{"successfully reconciled", "", "", "", ""}}, phaseAvailable},
		{"failed", func(l *shared.ConditionList) { setEnactmentFailedToConfigure(l, now, "boom") },
			row{[5]corev1.ConditionStatus{F, T, F, F, F}, [5]shared.ConditionReason{"FailedToConfigure", "FailedToConfigure", "FailedToConfigure", "FailedToConfigure", "SuccessfullyConfigured"}, [5]string{"", "boom", "", "", ""}}, phaseFailed},
		{"retrying", func(l *shared.ConditionList) { setEnactmentRetrying(l, now, retry) },
			row{[5]corev1.ConditionStatus{F, T, T, F, F}, [5]shared.ConditionReason{"Retrying", "Retrying", "Retrying", "Retrying", "SuccessfullyConfigured"}, [5]string{"", retry, retry, "", ""}}, phaseRetrying},
		{"aborted", func(l *shared.ConditionList) { setEnactmentAborted(l, now, abortedMessage("n1.p1")) },
			row{[5]corev1.ConditionStatus{F, F, F, F, T}, [5]shared.ConditionReason{"ConfigurationAborted", "ConfigurationAborted", "ConfigurationAborted", "ConfigurationAborted", "ConfigurationAborted"}, [5]string{"", "", "", "", `reconciliation of enactment "n1.p1" has aborted`}}, phaseAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l shared.ConditionList
			tt.set(&l)
			if diff := cmp.Diff(tt.want, rowOf(l)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			var types []shared.ConditionType
			for _, c := range l {
				types = append(types, c.Type)
			}
			if diff := cmp.Diff(shared.NodeNetworkConfigurationEnactmentConditionTypes[:], types); diff != "" {
				t.Errorf("condition order (-want +got):\n%s", diff)
			}
			st := shared.NodeNetworkConfigurationEnactmentStatus{PolicyGeneration: 3, Conditions: l}
			if got := phaseOf(&st, 3); got != tt.phase {
				t.Errorf("phase = %v, want %v", got, tt.phase)
			}
			if got := phaseOf(&st, 4); got != phaseNone {
				t.Errorf("phase of another generation = %v, want Unknown", got)
			}
		})
	}
	if want := "failed to reconcile n1.p1 on node n1: boom. Retrying 2/5"; retry != want {
		t.Errorf("retrying message %q, want %q", retry, want)
	}
}

func TestRetryBackoff(t *testing.T) {
	r := &PolicyReconciler{opts: PolicyOptions{RetryBackoff: time.Second, RetryMaxBackoff: 30 * time.Second}}
	var got []time.Duration
	for n := 1; n <= 7; n++ {
		got = append(got, r.backoff(n))
	}
	want := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
}

func TestSelectorMatches(t *testing.T) {
	labels := map[string]string{"a": "1", "b": "2"}
	for _, tt := range []struct {
		sel  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"a": "1"}, true},
		{map[string]string{"a": "1", "b": "2"}, true},
		{map[string]string{"a": "2"}, false},
		{map[string]string{"c": ""}, false},
	} {
		if got := selectorMatches(tt.sel, labels); got != tt.want {
			t.Errorf("selectorMatches(%v) = %v, want %v", tt.sel, got, tt.want)
		}
	}
}

func TestPhaseConditions(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		phase    string
		wantTrue shared.ConditionType
		wantErr  bool
	}{
		{PhasePending, shared.NodeNetworkConfigurationEnactmentConditionPending, false},
		{PhaseProgressing, shared.NodeNetworkConfigurationEnactmentConditionProgressing, false},
		{PhaseAvailable, shared.NodeNetworkConfigurationEnactmentConditionAvailable, false},
		{"Failing", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.phase, func(t *testing.T) {
			l, err := PhaseConditions(tt.phase, now)
			if (err != nil) != tt.wantErr {
				t.Fatalf("PhaseConditions(%q) error %v, want error %v", tt.phase, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			var st shared.NodeNetworkConfigurationEnactmentStatus
			st.Conditions = l
			// The phase the handler itself reads back from these
			// conditions is the one asked for.
			if got := phaseOf(&st, 0).String(); got != tt.phase {
				t.Errorf("phase of PhaseConditions(%q) = %s", tt.phase, got)
			}
			var trues []shared.ConditionType
			for _, c := range l {
				if c.Status == corev1.ConditionTrue {
					trues = append(trues, c.Type)
				}
			}
			if len(trues) != 1 || trues[0] != tt.wantTrue {
				t.Errorf("True conditions %v, want only %s", trues, tt.wantTrue)
			}
		})
	}
}
