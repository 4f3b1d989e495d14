package schema

// testModels checks model sections in the tests: the real registry of
// model kinds, set by models_test.go (package schema_test may import the
// models, which import schema).
var testModels ModelChecker

// SetTestModels sets the model checker the tests load specs with.
func SetTestModels(m ModelChecker) { testModels = m }
