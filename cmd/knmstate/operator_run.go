package main

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/internal/operator"
)

// runOperator wires the operator's parts (the certificate manager and the
// webhook configurations join here) and runs it.
func runOperator(ctx context.Context, cfg *rest.Config, opts operator.Options) error {
	return operator.Run(ctx, cfg, opts)
}
