-- needs: budget objects terminal
-- Continues the tree's cascade of terminal transitions (lib_terminal.lua): at most A.tb children
-- from its queue. The kernel calls it after a script whose reply said work was left (`tq`), until
-- one says none is: after the exit, signal or completion that began the cascade, or after the
-- retention sweep's `gc` call found one its coordinator left unfinished. Reply head: `tq` while
-- work is left.
cascade()
return reply({})
