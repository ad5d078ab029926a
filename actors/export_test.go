package actors

// SetForgetEvery makes replicas forget ended quotes every n records instead
// of every ForgetEvery, until the returned func restores it: a test sees
// the rule on a few records.
func SetForgetEvery(n uint64) (restore func()) {
	old := forgetEvery.Swap(n)
	return func() { forgetEvery.Store(old) }
}

// SetReplayBulkMin makes a replay of n records or more a bulk one instead
// of ReplayBulkMin, until the returned func restores it: a test takes the
// bulk path on a few records.
func SetReplayBulkMin(n uint64) (restore func()) {
	old := replayBulkMin.Swap(n)
	return func() { replayBulkMin.Store(old) }
}
