// Command cert-manager-controller runs cert-manager's controllers out of cluster, as the release's
// controller does with --leader-elect=false. The release's own main (cmd/controller) is a nested
// module, github.com/cert-manager/cert-manager/controller-binary, that replaces its parent with
// ../../ and imports the parent's internal packages: no module proxy serves it and nothing outside
// the repository can import it. This wrapper starts the same controllers from the published
// github.com/cert-manager/cert-manager module's public packages, with the release's defaults and
// its flags' names (a subset).
//
// Left out: Venafi (github.com/Venafi/vcert/v5, which the Go module proxy refuses to serve: 403
// "This module version is not available"), and with it the release's configuration file, whose
// package imports the Venafi controller; the experimental CertificateSigningRequest controllers;
// the Gateway API shims; leader election; the metrics, healthz and pprof servers.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	"github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	shimingresses "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/ingresses"
	cracme "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	crvault "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/vault"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	certificatesmetrics "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	dnsutil "github.com/cert-manager/cert-manager/pkg/issuer/acme/dns/util"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"

	// The issuer kinds, registered for the issuers and clusterissuers controllers.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/vault"
)

// defaultControllers are the release's DefaultEnabledControllers ("*") as of v1.21, but Venafi's.
var defaultControllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	certificatesmetrics.ControllerName,
	shimingresses.ControllerName,
	acmeorders.ControllerName,
	acmechallenges.ControllerName,
	cracme.CRControllerName,
	crapprover.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
	crvault.CRControllerName,
	trigger.ControllerName,
	issuing.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager-controller: %v\n", err)
		os.Exit(1)
	}
}

func list(value string) []string {
	var out []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig of the cluster (empty: in-cluster)")
	master := flag.String("master", "", "the API server's address, overriding the kubeconfig's")
	qps := flag.Float64("kube-api-qps", 20, "requests per second to the API server (when it has no priority and fairness)")
	burst := flag.Int("kube-api-burst", 50, "request burst to the API server")
	namespace := flag.String("namespace", "", "watch this namespace only (empty: all); turns the clusterissuers controller off")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "kube-system", "where ClusterIssuers' Secrets live")
	ownerRef := flag.Bool("enable-certificate-owner-ref", false, "make each Certificate the owner of its Secret")
	leaderElect := flag.Bool("leader-elect", false, "not supported: must be false")
	controllers := flag.String("controllers", "*", `controllers to run, comma-separated: "*" for the defaults, "-name" to leave one out`)
	workers := flag.Int("concurrent-workers", 5, "workers per controller")
	maxChallenges := flag.Int("max-concurrent-challenges", 60, "challenges processed at once")
	clusterIssuerAmbient := flag.Bool("cluster-issuer-ambient-credentials", true, "ClusterIssuers may use ambient credentials")
	issuerAmbient := flag.Bool("issuer-ambient-credentials", false, "Issuers may use ambient credentials")
	solverImage := flag.String("acme-http01-solver-image", "quay.io/jetstack/cert-manager-acmesolver:"+util.AppVersion, "the HTTP-01 solver pods' image")
	solverNonRoot := flag.Bool("acme-http01-solver-run-as-non-root", true, "run the HTTP-01 solver pods as non-root")
	http01Nameservers := flag.String("acme-http01-solver-nameservers", "", "host:port list for the HTTP-01 self-check's DNS lookups")
	dns01Nameservers := flag.String("dns01-recursive-nameservers", "", "host:port list for the DNS-01 self-check")
	dns01Only := flag.Bool("dns01-recursive-nameservers-only", false, "ask only --dns01-recursive-nameservers, never the authoritative servers")
	dns01Retry := flag.Duration("dns01-check-retry-period", 10*time.Second, "between DNS-01 self-checks")
	defaultIssuerName := flag.String("default-issuer-name", "", "the ingress shim's issuer for kubernetes.io/tls-acme Ingresses")
	defaultIssuerKind := flag.String("default-issuer-kind", "Issuer", "its kind")
	defaultIssuerGroup := flag.String("default-issuer-group", "cert-manager.io", "its group")
	autoAnnotations := flag.String("auto-certificate-annotations", "kubernetes.io/tls-acme", "annotations that make the ingress shim act with the default issuer")
	copiedAnnotations := flag.String("copied-annotation-prefixes", "*,-kubectl.kubernetes.io/,-fluxcd.io/,-argocd.argoproj.io/", "annotations copied from a Certificate to its requests and orders")
	minBackoff := flag.Duration("certificate-request-minimum-backoff-duration", time.Hour, "the first wait before a failed request is retried")
	maxBackoff := flag.Duration("certificate-request-maximum-backoff-duration", 32*time.Hour, "the longest such wait")
	featureGates := flag.String("feature-gates", "", "Name=true|false pairs, comma-separated")
	verbosity := flag.Int("v", 2, "log verbosity (2: info, 4: debug)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(flag.Args(), " "))
	}
	if *leaderElect {
		return fmt.Errorf("--leader-elect is not supported by this build")
	}

	gates := map[string]bool{}
	for _, pair := range list(*featureGates) {
		name, value, _ := strings.Cut(pair, "=")
		enabled, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("--feature-gates: %q is not Name=true|false", pair)
		}
		gates[name] = enabled
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
		return err
	}
	logging := logsapi.NewLoggingConfiguration()
	logging.Verbosity = logsapi.VerbosityLevel(*verbosity)
	logf.InitLogs()
	defer logf.FlushLogs()
	if err := logf.ValidateAndApply(logging); err != nil {
		return err
	}

	enabled := sets.New[string]()
	var disabled []string
	for _, name := range list(*controllers) {
		switch {
		case name == "*":
			enabled.Insert(defaultControllers...)
		case strings.HasPrefix(name, "-"):
			disabled = append(disabled, strings.TrimPrefix(name, "-"))
		default:
			if _, known := controller.Known()[name]; !known {
				return fmt.Errorf("unknown controller %q", name)
			}
			enabled.Insert(name)
		}
	}
	if enabled.Len() == 0 && len(disabled) > 0 {
		enabled.Insert(defaultControllers...)
	}
	if *namespace != "" {
		enabled.Delete(clusterissuers.ControllerName)
	}
	enabled.Delete(disabled...)

	nameservers := list(*dns01Nameservers)
	if len(nameservers) == 0 {
		nameservers = dnsutil.RecursiveNameservers
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	log := logf.FromContext(ctx)
	group, ctx := errgroup.WithContext(ctx)

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		APIServerHost:      *master,
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   float32(*qps),
		KubernetesAPIBurst: *burst,
		Namespace:          *namespace,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace:        *clusterResourceNamespace,
			ClusterIssuerAmbientCredentials: *clusterIssuerAmbient,
			IssuerAmbientCredentials:        *issuerAmbient,
		},
		ACMEOptions: controller.ACMEOptions{
			HTTP01SolverImage:                 *solverImage,
			HTTP01SolverResourceRequestCPU:    resource.MustParse("10m"),
			HTTP01SolverResourceRequestMemory: resource.MustParse("64Mi"),
			HTTP01SolverResourceLimitsCPU:     resource.MustParse("100m"),
			HTTP01SolverResourceLimitsMemory:  resource.MustParse("64Mi"),
			ACMEHTTP01SolverRunAsNonRoot:      *solverNonRoot,
			HTTP01SolverNameservers:           list(*http01Nameservers),
			DNS01CheckAuthoritative:           !*dns01Only,
			DNS01Nameservers:                  nameservers,
			DNS01CheckRetryPeriod:             *dns01Retry,
		},
		IngressShimOptions: controller.IngressShimOptions{
			DefaultIssuerName:                 *defaultIssuerName,
			DefaultIssuerKind:                 *defaultIssuerKind,
			DefaultIssuerGroup:                *defaultIssuerGroup,
			DefaultAutoCertificateAnnotations: list(*autoAnnotations),
		},
		CertificateOptions: controller.CertificateOptions{
			EnableOwnerRef:                           *ownerRef,
			CopiedAnnotationPrefixes:                 list(*copiedAnnotations),
			CertificateRequestMinimumBackoffDuration: *minBackoff,
			CertificateRequestMaximumBackoffDuration: *maxBackoff,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: *maxChallenges},
	})
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	log.Info("enabled controllers", "controllers", sets.List(enabled))
	for _, name := range slices.Sorted(maps.Keys(controller.Known())) {
		if !enabled.Has(name) {
			continue
		}
		loop, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("starting controller %s: %w", name, err)
		}
		group.Go(func() error { return loop.Run(*workers, ctx) })
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	log.Info("controllers started")
	err = group.Wait()
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	return err
}
