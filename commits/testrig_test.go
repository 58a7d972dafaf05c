package commits

// rigGame is the game the commit rig's tokens name.
const rigGame = 11
