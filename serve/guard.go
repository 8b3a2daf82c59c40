package serve

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// A browser lets any web page send a "simple" cross-origin POST (text/plain,
// no preflight) to 127.0.0.1, and a DNS-rebinding page can even read the
// answers: its own name resolves to 127.0.0.1 and the browser sends that
// name as Host. So, with or without a token, the service answers only
// requests whose Host names this server, that carry no cross-origin Origin,
// and (on the scoring endpoints) whose body is application/json, which a
// page cannot send without a CORS preflight the service never grants.

// hostAllowed reports whether r's Host names this server: a loopback name
// or address ("localhost", 127.0.0.0/8, ::1), the address the connection
// arrived on, or a name of Config.AllowedHosts ("*" allows any). Ports are
// not compared: the point is the name a browser would send.
func (s *Server) hostAllowed(r *http.Request) bool {
	if s.allowAnyHost {
		return true
	}
	host := hostOnly(r.Host)
	if host == "" {
		return false
	}
	if isLoopback(host) || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if _, ok := s.allowedHosts[host]; ok {
		return true
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := la.(*net.TCPAddr); ok {
			if ip := net.ParseIP(host); ip != nil && ip.Equal(ta.IP) {
				return true
			}
		}
	}
	return false
}

// hostOnly is the lower-cased host of a Host header, without port,
// brackets or a trailing dot.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(h, "]"), "["), ".")
	return strings.ToLower(h)
}

// originAllowed reports whether r is not a cross-origin browser request:
// no Origin header, or one whose host and port are r's Host; and no
// Sec-Fetch-Site other than same-origin or none. Trainers' HTTP clients
// send neither header.
func originAllowed(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return true
	}
	if len(origins) > 1 {
		return false
	}
	u, err := url.Parse(origins[0])
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return false // "null" among them: a sandboxed or file: page
	}
	return strings.EqualFold(u.Host, r.Host)
}

// allowedHostSet builds the set of Config.AllowedHosts.
func allowedHostSet(hosts []string) (set map[string]struct{}, any bool) {
	set = map[string]struct{}{}
	for _, h := range hosts {
		if h == "*" {
			any = true
			continue
		}
		set[hostOnly(h)] = struct{}{}
	}
	return set, any
}
