package server

// WithConsoleSecret sets the key of the console login form's tokens
// (loginForm). Servers behind one tenant router share it: the router
// sends a login to the server of the tenant the key belongs to, which is
// not always the server that drew the form.
func WithConsoleSecret(secret []byte) Option {
	return func(s *Server) { s.consoleSecret = secret }
}
