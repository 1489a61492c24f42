package console

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"time"
)

// assets are the pages: index.html with app.js, detail.html with
// detail.js (the page of one topic, group or agent), charts.html with
// charts.js, browse.html with browse.js (the message browser),
// admin.html with admin.js and admin.css (the admin actions), dom.js
// (what every page's script shares), style.css, and uPlot (vendor/uplot: the charting library, its licence and a note
// of its version). They fetch nothing from
// elsewhere, so the console works on a closed network.
//
//go:embed assets
var assets embed.FS

// Assets serves the page's files; mount it with the "/console/" prefix
// stripped. The files change only with the binary, but browsers are asked
// to revalidate so that an upgraded agent's page is picked up.
func Assets() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageHeaders(w)
		files.ServeHTTP(w, r)
	})
}

// DetailPage serves detail.html at whatever path it is mounted on
// (/console/topics/<name>, /console/groups/<id>, /console/agents/<id>):
// the page reads from its own path what to show. The path is not looked
// up as a file, so a group id may hold "/" or "..".
func DetailPage() http.Handler {
	page, err := assets.ReadFile("assets/detail.html")
	if err != nil {
		panic(err) // embedded above
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageHeaders(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeContent(w, r, "detail.html", time.Time{}, bytes.NewReader(page))
	})
}

// pageHeaders: browsers revalidate (an upgraded agent's page is picked
// up), and a page loads nothing from elsewhere.
func pageHeaders(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Security-Policy", "default-src 'self'")
}
