package trace

// WithAfterStore runs fn between the store write and the ack of every
// message (the kill -9 test kills the process there).
func WithAfterStore(fn func()) ConsumerOption { return func(c *Consumer) { c.afterStore = fn } }
