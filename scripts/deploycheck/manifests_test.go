package deploycheck

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// manifests holds every object of examples/deploy/kubernetes, decoded.
type manifests struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	pdbs        []*policyv1.PodDisruptionBudget
}

// loadManifests decodes each YAML document strictly into its k8s.io/api
// type: an unknown or misspelt field, a duplicate key, a value of the wrong
// type or an invalid quantity fails, as a schema check would. Offline:
// kubeconform would need its schemas from the network.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in examples/deploy/kubernetes: %v", err)
	}
	var ms manifests
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(b) {
			where := filepath.Base(f) + " document " + string(rune('1'+i))
			var tm v1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				d := &appsv1.Deployment{}
				ms.deployments, obj = append(ms.deployments, d), d
			case "v1 Service":
				s := &corev1.Service{}
				ms.services, obj = append(ms.services, s), s
			case "policy/v1 PodDisruptionBudget":
				p := &policyv1.PodDisruptionBudget{}
				ms.pdbs, obj = append(ms.pdbs, p), p
			default:
				t.Errorf("%s: unexpected kind %q (apiVersion %q)", where, tm.Kind, tm.APIVersion)
				continue
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		}
	}
	return &ms
}

// splitDocuments splits a YAML stream at its "---" lines, dropping
// documents that hold only comments.
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		empty := true
		for _, line := range strings.Split(string(d), "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				empty = false
			}
		}
		if !empty {
			docs = append(docs, d)
		}
	}
	return docs
}

// The manifest set: a Deployment, a Service and a PodDisruptionBudget that
// decode strictly and hold together (selectors, ports, names).
func TestManifestsSchema(t *testing.T) {
	ms := loadManifests(t)
	if len(ms.deployments) != 1 || len(ms.services) != 1 || len(ms.pdbs) != 1 {
		t.Fatalf("want one Deployment, Service and PodDisruptionBudget, got %d, %d, %d", len(ms.deployments), len(ms.services), len(ms.pdbs))
	}
	d, svc, pdb := ms.deployments[0], ms.services[0], ms.pdbs[0]
	for _, m := range []v1.ObjectMeta{d.ObjectMeta, svc.ObjectMeta, pdb.ObjectMeta} {
		if errs := validation.IsDNS1123Subdomain(m.Name); len(errs) > 0 {
			t.Errorf("name %q: %v", m.Name, errs)
		}
	}
	// What the API server itself requires of these objects.
	if d.Spec.Selector == nil {
		t.Fatal("Deployment: spec.selector is required")
	}
	sel, err := v1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		t.Fatalf("Deployment selector: %v (empty %v)", err, sel == nil || sel.Empty())
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	if !sel.Matches(podLabels) {
		t.Errorf("Deployment selector %v does not match its pod labels %v", sel, podLabels)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Name == "" || c.Image == "" {
		t.Errorf("container name %q and image %q are required", c.Name, c.Image)
	}
	portNames := map[string]int32{}
	for _, p := range c.Ports {
		portNames[p.Name] = p.ContainerPort
	}
	if svc.Spec.Selector == nil || !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("Service selector %v does not select the pods %v", svc.Spec.Selector, podLabels)
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.StrVal != "" && portNames[p.TargetPort.StrVal] == 0 {
			t.Errorf("Service port %s targets %q, which the container does not name", p.Name, p.TargetPort.StrVal)
		}
	}
	if pdb.Spec.Selector == nil {
		t.Fatal("PodDisruptionBudget: spec.selector is required")
	}
	if ps, err := v1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !ps.Matches(podLabels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the pods (%v)", pdb.Spec.Selector, err)
	}
	if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
		t.Error("PodDisruptionBudget: set maxUnavailable or minAvailable")
	}
}

// What docs/deploy.md promises of the Deployment: readiness on /readyz,
// liveness on /healthz, a preStop drain that needs no shell, a grace
// period covering preStop + --drain-delay + --shutdown-timeout, resource
// requests, a non-root and read-only container, the auth token from a
// Secret (never in argv), and serve flags that exist.
func TestManifestsDeployment(t *testing.T) {
	ms := loadManifests(t)
	if len(ms.deployments) != 1 {
		t.Fatalf("want one Deployment, got %d", len(ms.deployments))
	}
	d := ms.deployments[0]
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	checkServeArgs(t, "Deployment args", c.Args)
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas %v: a rolling restart without loss needs at least 2", d.Spec.Replicas)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("%s probe: want an httpGet probe on %s", name, path)
		case p.HTTPGet.Path != path:
			t.Errorf("%s probe path %q, want %s", name, p.HTTPGet.Path, path)
		case p.HTTPGet.Port.StrVal == "" && p.HTTPGet.Port.IntVal == 0:
			t.Errorf("%s probe has no port", name)
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")

	var preStop time.Duration
	switch h := c.Lifecycle; {
	case h == nil || h.PreStop == nil:
		t.Error("no preStop hook: the pod must keep serving while endpoints catch up")
	case h.PreStop.Exec != nil:
		t.Error("preStop runs a command: the image has no shell or sleep binary; use the sleep action")
	case h.PreStop.Sleep == nil || h.PreStop.Sleep.Seconds <= 0:
		t.Errorf("preStop %+v: want a sleep action", h.PreStop)
	default:
		preStop = time.Duration(h.PreStop.Sleep.Seconds) * time.Second
	}
	dur := func(flag string) time.Duration {
		v, ok := flagValue(c.Args, flag)
		if !ok {
			t.Errorf("args lack %s=...", flag)
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Errorf("%s=%s: %v", flag, v, err)
		}
		return d
	}
	drain, shutdown := dur("--drain-delay"), dur("--shutdown-timeout")
	if drain <= 0 {
		t.Error("--drain-delay must be positive for /readyz to turn 503 before anything is refused")
	}
	if period := c.ReadinessProbe; period != nil && time.Duration(period.PeriodSeconds*period.FailureThreshold)*time.Second > drain {
		t.Errorf("the readiness probe needs %ds of failures to mark the pod unready, longer than --drain-delay %v", period.PeriodSeconds*period.FailureThreshold, drain)
	}
	grace := time.Duration(0)
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	if need := preStop + drain + shutdown; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %v: the drain needs preStop %v + --drain-delay %v + --shutdown-timeout %v = %v, and more to stop the children",
			grace, preStop, drain, shutdown, need)
	}
	if v, ok := flagValue(c.Args, "--replica-id"); !ok || v != "$(POD_NAME)" {
		t.Errorf("--replica-id=%q, want $(POD_NAME)", v)
	}
	var podName, token bool
	for _, e := range c.Env {
		switch {
		case e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			podName = true
		case e.Name == "MCP_BRIDGE_AUTH_TOKEN":
			token = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}
	}
	if !podName {
		t.Error("POD_NAME must come from metadata.name (the replica id)")
	}
	if !token {
		t.Error("MCP_BRIDGE_AUTH_TOKEN must come from a Secret (secretKeyRef), never a literal")
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--auth-token") }) {
		t.Error("the token must not be in args (visible in the pod spec and ps)")
	}

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := c.Resources.Requests[r]
		if !ok || q.IsZero() {
			t.Errorf("no %s request", r)
		}
	}
	// Sized from docs/benchmarks.md: 1,000 open streams take 50.4 MiB with
	// the child, and a 16 MiB result peaks at 125 MiB with it.
	if q := c.Resources.Requests[corev1.ResourceMemory]; q.Cmp(resource.MustParse("51Mi")) < 0 {
		t.Errorf("memory request %s is below the 50.4 MiB that 1,000 open streams take", q.String())
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && q.Cmp(resource.MustParse("126Mi")) < 0 {
		t.Errorf("memory limit %s is below the 125 MiB peak of a 16 MiB result", q.String())
	}

	nonRoot := func(sc *corev1.PodSecurityContext) bool {
		return sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && sc.RunAsUser != nil && *sc.RunAsUser != 0
	}
	if !nonRoot(pod.SecurityContext) {
		t.Error("the pod must run as a non-root user (runAsNonRoot, runAsUser)")
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container securityContext %s: want no privilege escalation, a read-only root filesystem, all capabilities dropped", mustJSON(c.SecurityContext))
	}
	if s := d.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable == nil || s.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update %s: want maxUnavailable 0, so a rollout never drops below the replica count", mustJSON(d.Spec.Strategy))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
