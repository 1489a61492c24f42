package console

import (
	"embed"
	"io/fs"
	"net/http"
)

// assets are the pages: index.html with app.js, charts.html with
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
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", "default-src 'self'")
		files.ServeHTTP(w, r)
	})
}
