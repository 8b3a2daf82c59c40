package conform

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// bigPolicyRequest is a policy_loss request of 64 rows of 4096 tokens.
func bigPolicyRequest() []byte {
	row := strings.TrimSuffix(strings.Repeat("-1.234567,", 4096), ",")
	rows := strings.TrimSuffix(strings.Repeat("["+row+"],", 64), ",")
	mask := strings.TrimSuffix(strings.Repeat("["+strings.TrimSuffix(strings.Repeat("1,", 4096), ",")+"],", 64), ",")
	return []byte(fmt.Sprintf(`{"op": "policy_loss", "logp": [%s], "old_logp": [%s], "advantages": [%s], "mask": [%s]}`, rows, rows, rows, mask))
}

// BenchmarkCheck is the checker's cost beside the whole request's.
func BenchmarkCheck(b *testing.B) {
	req := bigPolicyRequest()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		if err := check(req, reflect.TypeFor[PolicyLossRequest]()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunPolicyLoss(b *testing.B) {
	req := bigPolicyRequest()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		if _, err := Run(req); err != nil {
			b.Fatal(err)
		}
	}
}
