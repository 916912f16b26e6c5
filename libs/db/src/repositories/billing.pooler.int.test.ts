// The billing repository's suite, once more through PgBouncer in transaction mode (throughPooler).
import { throughPooler } from '@gensvc/testing';
import './billing.int.test';

throughPooler();
