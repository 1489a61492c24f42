package abuse

import (
	"testing"

	"github.com/strata-streaming/strata/internal/testagent"
)

func TestMain(m *testing.M) { testagent.Main(m) }
