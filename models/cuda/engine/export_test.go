package engine

// SizeClass exports sizeClass to the tests.
var SizeClass = sizeClass
