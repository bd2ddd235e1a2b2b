package telemetry

// AggregateAbsent counts an answer of the aggregated endpoint that server
// was left out of at step ("initialize", or a list method). Server names
// come from the configuration file and steps from a fixed set, so the
// series are bounded. Safe on a nil Telemetry.
func (t *Telemetry) AggregateAbsent(server, step string) {
	if t == nil || t.met == nil {
		return
	}
	t.met.absent.WithLabelValues(labelValue(server), labelValue(step)).Inc()
}
