package server_test

import "github.com/sluice/sluice/config"

type configT = config.Config
