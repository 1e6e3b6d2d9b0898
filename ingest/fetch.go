package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/ledongthuc/pdf"

	"github.com/h4r/h4r"
)

// fetchTimeout bounds one page fetch.
const fetchTimeout = 30 * time.Second

// httpClient returns the client of url sources.
func httpClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !allowPrivate {
		d.Control = refusePrivate
	}
	tr := &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: fetchTimeout}
	return &http.Client{Transport: tr, Timeout: fetchTimeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return fmt.Errorf("more than 5 redirects")
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("a redirect to %s: only http and https are fetched", req.URL.Scheme)
		}
		return nil
	}}
}

// fetchPage fetches one page; the listing holds it as one file whose
// content is the page as Markdown (HTML converted), text, or PDF text.
func fetchPage(ctx context.Context, client *http.Client, raw string, auth *Auth, maxBytes int64) (listing, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return listing{}, h4r.Errorf(h4r.EINVALID, "uri", "%q is not an http or https URL", raw)
	}
	u.Fragment = ""
	name := u.String()
	f := file{path: name, read: func() ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, name, nil)
		if err != nil {
			return nil, err
		}
		if auth != nil && auth.Token != "" {
			req.Header.Set("Authorization", "Bearer "+auth.Token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetching: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetching: the server answered %s", resp.Status)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading the page: %w", err)
		}
		if int64(len(body)) > maxBytes {
			return nil, errTooLarge{maxBytes}
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		switch {
		case mt == "text/html" || mt == "application/xhtml+xml":
			md, err := htmltomarkdown.ConvertString(string(body))
			if err != nil {
				return nil, fmt.Errorf("converting the page's HTML to text: %w", err)
			}
			return []byte(md), nil
		case mt == "application/pdf":
			return pdfText(body)
		case strings.HasPrefix(mt, "text/"), mt == "":
			return body, nil
		}
		return nil, errSkip{fmt.Sprintf("content type %q is not text, HTML or PDF", mt)}
	}}
	return listing{files: []file{f}, repo: u.Host, root: name, single: true}, nil
}

// errTooLarge: a file over the size limit (skipped, reported).
type errTooLarge struct{ limit int64 }

func (e errTooLarge) Error() string { return fmt.Sprintf("larger than the %d-byte limit", e.limit) }

// errSkip: a file that is not ingested, for the reason given.
type errSkip struct{ why string }

func (e errSkip) Error() string { return e.why }

// pdfText extracts a PDF's text layer. The PDF reader panics on some
// corrupted files; that is an error for this file, not a crash.
func pdfText(b []byte) (text []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = nil, fmt.Errorf("not a readable PDF: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("not a readable PDF: %w", err)
	}
	tr, err := r.GetPlainText()
	if err != nil {
		return nil, fmt.Errorf("reading the PDF's text: %w", err)
	}
	out, err := io.ReadAll(tr)
	if err != nil {
		return nil, fmt.Errorf("reading the PDF's text: %w", err)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, errSkip{"a PDF without a text layer"}
	}
	return out, nil
}
