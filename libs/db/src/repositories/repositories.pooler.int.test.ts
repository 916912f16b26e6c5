// The repositories' suite, once more through PgBouncer in transaction mode (throughPooler).
import { throughPooler } from '@gensvc/testing';
import './repositories.int.test';

throughPooler();
