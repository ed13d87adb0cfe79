package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/metrics"
)

// gaugeCollector serves kubernetes-nmstate's five gauges, computed from
// the cache at every scrape by the pure functions of internal/metrics. No
// gauge state is kept between scrapes, so a deleted object's series is
// gone at the next scrape, and nothing can drift from the objects.
//
// Only the leader serves them (serveGauges): a follower's cache may not
// hold the objects, and two replicas serving the same series would double
// every sum once the ServiceMonitor drops the pod label.
type gaugeCollector struct {
	reader client.Reader
	log    logr.Logger
	descs  map[string]*prometheus.Desc
}

func newGaugeCollector(reader client.Reader, log logr.Logger) *gaugeCollector {
	c := &gaugeCollector{reader: reader, log: log, descs: map[string]*prometheus.Desc{}}
	for _, g := range metrics.UpstreamGauges() {
		c.descs[g.Name] = g.Desc()
	}
	return c
}

func (c *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// collectTimeout bounds the cache reads of one scrape (they do not wait
// for the API server: the informers are synced before the collector is
// registered).
const collectTimeout = 10 * time.Second

func (c *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	emit := func(g metrics.Gauge, samples []metrics.Sample) {
		for _, s := range samples {
			m, err := prometheus.NewConstMetric(c.descs[g.Name], prometheus.GaugeValue, s.Value, s.Labels...)
			if err != nil {
				// Not expected (label values come from JSON, valid UTF-8);
				// a panic here would take the process down.
				c.log.Error(err, "series left out of the scrape", "metric", g.Name, "labels", s.Labels)
				continue
			}
			ch <- m
		}
	}
	// A failed read leaves its gauges out of this scrape rather than
	// failing the scrape (which would lose every other metric too).
	var policies nmstatev1.NodeNetworkConfigurationPolicyList
	if err := c.reader.List(ctx, &policies); err != nil {
		c.log.Error(err, "policy gauges left out of the scrape")
	} else {
		emit(metrics.PoliciesStatus, metrics.PoliciesStatusSamples(policies.Items))
	}
	var enactments v1beta1.NodeNetworkConfigurationEnactmentList
	if err := c.reader.List(ctx, &enactments); err != nil {
		c.log.Error(err, "enactment gauges left out of the scrape")
	} else {
		emit(metrics.FeaturesApplied, metrics.FeaturesAppliedSamples(enactments.Items))
		emit(metrics.EnactmentsStatus, metrics.EnactmentsStatusSamples(enactments.Items))
	}
	var states v1beta1.NodeNetworkStateList
	if err := c.reader.List(ctx, &states); err != nil {
		c.log.Error(err, "node network state gauges left out of the scrape")
		return
	}
	for _, s := range states.Items {
		sum, err := metrics.Summarize(s.Status.CurrentState)
		if err != nil {
			c.log.Error(err, "node network state left out of the interface and route gauges", "node", s.Name)
			continue
		}
		emit(metrics.NetworkInterfaces, metrics.NetworkInterfacesSamples(s.Name, sum))
		emit(metrics.NetworkRoutes, metrics.NetworkRoutesSamples(s.Name, sum))
	}
}

// serveGauges adds to mgr a runnable that, once this instance leads,
// waits for the cache to hold policies, enactments and node network
// states, registers the gauge collector with reg, and unregisters it when
// the term's manager stops. A leader that loses its Lease stops its term
// (Run), so a former leader never serves stale series; a follower, which
// runs no manager, serves none.
func serveGauges(mgr manager.Manager, reg prometheus.Registerer, log logr.Logger) error {
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for _, o := range []client.Object{
			&nmstatev1.NodeNetworkConfigurationPolicy{},
			&v1beta1.NodeNetworkConfigurationEnactment{},
			&v1beta1.NodeNetworkState{},
		} {
			if _, err := mgr.GetCache().GetInformer(ctx, o); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("gauges: informer: %w", err)
			}
		}
		c := newGaugeCollector(mgr.GetClient(), log)
		if err := reg.Register(c); err != nil {
			// Only possible with two controllers in one process (tests);
			// metrics are no reason to stop the controller.
			log.Error(err, "kubernetes-nmstate gauges not served")
			<-ctx.Done()
			return nil
		}
		defer reg.Unregister(c)
		log.Info("serving kubernetes-nmstate gauges")
		<-ctx.Done()
		return nil
	}))
	if err != nil {
		return fmt.Errorf("gauges: %w", err)
	}
	return nil
}

// reduceNodeNetworkState is the cache transform of node network states:
// the controller's decisions read only their metadata, the gauges only
// interface types and route destinations (metrics.ReduceState), so the
// cache does not hold every node's full state. Anything that needs a
// node's full state must read it from the API server.
func reduceNodeNetworkState(obj any) (any, error) {
	if s, ok := obj.(*v1beta1.NodeNetworkState); ok {
		s.Status.CurrentState = metrics.ReduceState(s.Status.CurrentState)
		s.ManagedFields = nil
	}
	return obj, nil
}
